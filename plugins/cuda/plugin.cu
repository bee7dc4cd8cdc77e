// The plugin's entry points: the descriptor (score 0 with the reason when there is no usable GPU), init (options),
// and the backend family table: devices and ops here, memory in device_buffers.cu, streams and events in
// device_queues.cu. Built twice from these sources: as `cuda` with nvcc and as `hip` with clang for AMD GPUs
// (plugins/hip), the name coming from STRATA_GPU_PLUGIN_NAME.
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "instance.hpp"
#include "strata/format/tensor_checks.hpp"
#include "strata/plugin_descriptor.hpp"
#include "strata/plugin_options.hpp"

namespace strata::gpu {
namespace {

constexpr const char* kName = kPluginName;

#ifdef STRATA_GPU_HIP
constexpr const char* kNoDevice = "no AMD GPU";
constexpr const char* kNoDriver = "no AMD GPU (no ROCm driver)";
#else
constexpr const char* kNoDevice = "no CUDA device";
constexpr const char* kNoDriver = "no CUDA driver";
#endif

struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    const cudaError_t err = cudaGetDeviceCount(&r.count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      r.count = 0;
      r.reason = err == cudaErrorInsufficientDriver ? kNoDriver
                 : err == cudaErrorNoDevice         ? kNoDevice
                                                    : std::string(kNoDevice) + " (" + cudaGetErrorName(err) + ")";
      return r;
    }
    if (r.count == 0) {
      r.reason = kNoDevice;
      return r;
    }
    cudaDeviceProp props{};
    if (cudaGetDeviceProperties(&props, 0) == cudaSuccess) {
      r.reason = std::string(props.name) + ", " + std::to_string(r.count) + (r.count == 1 ? " device" : " devices");
    } else {
      r.reason = std::to_string(r.count) + " devices";
    }
    return r;
  }();
  return p;
}

strata_plugin_descriptor make_descriptor() {
  // GPUs outrank every CPU backend for `auto`.
  return plugin_descriptor(STRATA_KIND_BACKEND, kName, "0.1.0", "backend", probe().count > 0 ? 100 : 0,
                           probe().reason.c_str());
}

uint32_t device_count(void*) { return 1; }

strata_status* device_info(void* c, uint32_t index, strata_device_info* out) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (index != 0) return wrong_device(inst, index);
    size_t free_b = 0, total_b = 0;
    check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    out->struct_size = sizeof *out;
    out->kind = STRATA_DEVICE_GPU;
    out->name = inst->ctx.device_name().c_str();
    out->arch = inst->ctx.arch().c_str();
    out->memory_total = total_b;
    out->memory_free = free_b;
    out->compute_units = static_cast<uint32_t>(inst->ctx.props().multiProcessorCount);
    out->reserved0 = 0;
    return nullptr;
  });
}

uint32_t supports_op(void* c, uint32_t device, const strata_op* op) {
  try {
    return device == 0 && op != nullptr && !check_op(*op, static_cast<Instance*>(c)->ctx.options()) ? 1u : 0u;
  } catch (...) {
    return 0;
  }
}

// Checks every op, then enqueues them on the compute stream (replaying a captured graph when the list was seen
// before); waits for them when `wait`.
strata_status* enqueue(void* c, uint32_t device, const strata_op* ops, size_t n_ops, bool wait) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    std::lock_guard<std::mutex> lock(inst->ctx.mutex());
    if (auto why = format::check_op_array(ops, n_ops)) {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kName) + ": " + *why);
    }
    bool gelu_table = false;
    for (size_t i = 0; i < n_ops; ++i) {
      if (Check why = check_op(ops[i], inst->ctx.options())) {
        return inst->ctx.error(STRATA_ERR_UNSUPPORTED, std::string(kName) + ": op " + std::to_string(i) + ": " + *why);
      }
      gelu_table = gelu_table || (ops[i].kind == STRATA_OP_GELU && ops[i].i[0] == 1);
    }
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    // GELU's f16 table goes up before any capture of the list (graphs.run may capture it at once).
    if (gelu_table) inst->ctx.upload_gelu_table();
    inst->graphs.run(inst->ctx, ops, n_ops);
    if (wait) check_cuda(cudaStreamSynchronize(inst->ctx.stream()), "compute");
    return nullptr;
  });
}

strata_status* compute(void* c, uint32_t device, const strata_op* ops, size_t n_ops) {
  return enqueue(c, device, ops, n_ops, true);
}

strata_status* compute_async(void* c, uint32_t device, const strata_op* ops, size_t n_ops) {
  return enqueue(c, device, ops, n_ops, false);
}

const strata_backend_v1 kBackend = {{sizeof(strata_backend_v1), STRATA_BACKEND_MINOR},
                                    device_count,
                                    device_info,
                                    supports_op,
                                    compute,
                                    buffer_alloc,
                                    buffer_free,
                                    copy,
                                    synchronize,
                                    stream_create,
                                    stream_destroy,
                                    event_create,
                                    event_destroy,
                                    event_record,
                                    stream_wait,
                                    event_query,
                                    event_synchronize,
                                    copy_async,
                                    compute_async,
                                    host_register,
                                    host_unregister,
                                    copy_batch_async};

const void* get_interface(void*, const char* family, uint32_t version) {
  const std::string f = family != nullptr ? family : "";
  if (f == STRATA_BACKEND_FAMILY && version == STRATA_BACKEND_VERSION) return &kBackend;
  return nullptr;
}

void destroy(void* c) { delete static_cast<Instance*>(c); }

const strata_plugin_descriptor* query() {
  static const strata_plugin_descriptor d = make_descriptor();
  return &d;
}

strata_status* init(const strata_host_api* host, const char* const* options, size_t n_options,
                    strata_plugin_instance* out) {
  Options o;
  for (size_t i = 0; i < n_options; ++i) {
    const PluginOption opt = split_option(options[i]);
    const std::string key(opt.key), value(opt.value);
    if (key == "device") {
      try {
        size_t used = 0;
        o.device = std::stoi(value, &used);
        if (used != value.size() || o.device < 0) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                                (std::string(kName) + ": device must be a GPU index (0, 1, ...), not '" + value + "'").c_str());
      }
    } else if (key == "priority") {
      if (value != "high" && value != "normal") {
        return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                                (std::string(kName) + ": priority must be high or normal, not '" + value + "'").c_str());
      }
      o.high_priority = value == "high";
    } else if (key == "graphs" || key == "fuse" || key == "overlap" || key == "canonical_double") {
      bool* target = key == "graphs"  ? &o.graphs
                     : key == "fuse"    ? &o.fuse
                     : key == "overlap" ? &o.overlap
                                        : &o.canonical_double;
      if (!parse_bool_option(value, target)) {
        return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                                (std::string(kName) + ": " + key + " must be true or false, not '" + value + "'").c_str());
      }
    } else {
      return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                              (std::string(kName) + ": unknown option '" + key + "' (known: device, graphs, fuse, overlap, priority, canonical_double)").c_str());
    }
  }
  const Probe& p = probe();
  if (p.count == 0) return host->status_new(STRATA_ERR_UNSUPPORTED, (std::string(kName) + ": " + p.reason).c_str());
  if (o.device >= p.count) {
    return host->status_new(STRATA_ERR_INVALID_ARGUMENT,
                            (std::string(kName) + ": device " + std::to_string(o.device) + " does not exist (" +
                             std::to_string(p.count) + (p.count == 1 ? " GPU" : " GPUs") + " here)").c_str());
  }
  std::unique_ptr<Instance> inst;
  try {
    inst = std::make_unique<Instance>(host, o);
  } catch (const OpFailure& e) {
    return host->status_new(e.code, (std::string(kName) + ": " + e.what()).c_str());
  }
  out->struct_size = sizeof *out;
  out->reserved0 = 0;
  out->ctx = inst.release();
  out->get_interface = get_interface;
  out->destroy = destroy;
  return nullptr;
}

}  // namespace
}  // namespace strata::gpu

STRATA_PLUGIN_DEFINE(strata::gpu::query, strata::gpu::init)
