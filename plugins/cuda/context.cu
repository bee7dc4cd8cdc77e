#include <string>

#include "context.hpp"
#include "ops.hpp"
#include "strata/format/gelu_table.hpp"

namespace strata::gpu {

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw OpFailure(STRATA_ERR_DEVICE, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

Context::Context(const strata_host_api* host, const Options& options) : host_(host), options_(options) {
  check_cuda(cudaSetDevice(options_.device), "cudaSetDevice");
  check_cuda(cudaGetDeviceProperties(&props_, options_.device), "cudaGetDeviceProperties");
  if (options_.high_priority) {
    // Its kernels are scheduled ahead of other streams' waiting blocks: another engine waits on each of its ops.
    int least = 0, greatest = 0;
    check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    check_cuda(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority");
  } else {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  device_name_ = props_.name;
#ifdef STRATA_NONCANONICAL
  device_name_ += " [non-canonical build]";
#endif
#ifdef STRATA_GPU_HIP
  arch_ = props_.gcnArchName;
#else
  arch_ = "sm_" + std::to_string(props_.major) + std::to_string(props_.minor);
#endif
}

Context::~Context() {
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  for (void* p : scratch_) {
    if (p != nullptr) (void)cudaFree(p);
  }
  if (gelu_table_ != nullptr) (void)cudaFree(gelu_table_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

void Context::log(strata_log_level level, const std::string& message) const {
  host_->log(level, STRATA_GPU_PLUGIN_NAME, message.c_str());
}

void* Context::scratch(ScratchSlot slot, uint64_t bytes) {
  const auto i = static_cast<size_t>(slot);
  if (bytes <= scratch_bytes_[i]) return scratch_[i];
  if (capturing_ && sizing_) {
    noted_[i] = noted_[i] > bytes ? noted_[i] : bytes;
    return scratch_[i];  // the kernels captured with it never run
  }
  if (capturing_) throw OpFailure(STRATA_ERR_INTERNAL, "scratch memory would grow during graph capture");
  // Round up so that windows of slowly growing size do not reallocate every time.
  uint64_t want = 1u << 20;
  while (want < bytes) want *= 2;
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (scratch)");
  if (scratch_[i] != nullptr) check_cuda(cudaFree(scratch_[i]), "cudaFree (scratch)");
  scratch_[i] = nullptr;
  scratch_bytes_[i] = 0;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, want);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw OpFailure(STRATA_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(want) + " bytes of scratch memory on " +
                                                  device_name_ + ": " + cudaGetErrorString(err));
  }
  scratch_[i] = p;
  scratch_bytes_[i] = want;
  if (slot == ScratchSlot::Counters) check_cuda(cudaMemsetAsync(p, 0, want, stream_), "cudaMemsetAsync (counters)");
  ++scratch_generation_;
  return p;
}

const float* Context::upload_gelu_table() {
  if (gelu_table_ != nullptr) return gelu_table_;
  if (capturing_) throw OpFailure(STRATA_ERR_INTERNAL, "GELU's f16 table would be uploaded during graph capture");
  constexpr uint64_t kBytes = 65536 * sizeof(float);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, kBytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    throw OpFailure(STRATA_ERR_OUT_OF_MEMORY, "cannot allocate GELU's f16 table (" + std::to_string(kBytes) + " bytes) on " +
                                                  device_name_ + ": " + cudaGetErrorString(err));
  }
  // The host table lives as long as the process: the copy may complete after the call returns.
  const cudaError_t copied = cudaMemcpyAsync(p, format::gelu_f16_table(), kBytes, cudaMemcpyHostToDevice, stream_);
  if (copied != cudaSuccess) {
    (void)cudaFree(p);
    check_cuda(copied, "cudaMemcpyAsync (GELU's f16 table)");
  }
  gelu_table_ = static_cast<float*>(p);
  return gelu_table_;
}

bool Context::grow_noted() {
  bool grew = false;
  for (size_t i = 0; i < noted_.size(); ++i) {
    if (noted_[i] > scratch_bytes_[i]) {
      (void)scratch(static_cast<ScratchSlot>(i), noted_[i]);
      grew = true;
    }
    noted_[i] = 0;
  }
  return grew;
}

}  // namespace strata::gpu
