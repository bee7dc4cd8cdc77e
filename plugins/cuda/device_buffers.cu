// Backend memory members: device and page-locked host buffers (1.1), copies (1.1 synchronous, 1.2 on a stream,
// 1.8 many in one call), and registration of host memory the caller owns (1.2), such as the mapped model file that PCIe copies read.
#include <unistd.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "instance.hpp"

namespace strata::gpu {
namespace {

bool copy_kind(uint32_t kind, cudaMemcpyKind& out) {
  switch (kind) {
    case STRATA_COPY_HOST_TO_DEVICE: out = cudaMemcpyHostToDevice; return true;
    case STRATA_COPY_DEVICE_TO_HOST: out = cudaMemcpyDeviceToHost; return true;
    case STRATA_COPY_DEVICE_TO_DEVICE: out = cudaMemcpyDeviceToDevice; return true;
    default: return false;
  }
}

strata_status* bad_copy_kind(Instance* inst, uint32_t kind) {
  return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + ": unknown copy kind " +
                                                          std::to_string(kind) + " (1 host to device, 2 device to host, 3 device to device)");
}

}  // namespace

strata_status* buffer_alloc(void* c, uint32_t device, uint64_t bytes, uint32_t kind, void** out) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    *out = nullptr;
    if (device != 0) return wrong_device(inst, device);
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    cudaError_t err = cudaSuccess;
    if (kind == STRATA_BUFFER_DEVICE) {
      err = cudaMalloc(out, bytes == 0 ? 1 : bytes);
    } else if (kind == STRATA_BUFFER_HOST_PINNED || kind == STRATA_BUFFER_HOST_MAPPED) {
      // Unified addressing: a mapped buffer's host pointer is also its device pointer. Portable: pinned (and, mapped,
      // addressable) for every device of the process, so that a peer card (runtime.peer_device) reads and writes it too.
      err = cudaHostAlloc(out, bytes == 0 ? 1 : bytes,
                          (kind == STRATA_BUFFER_HOST_MAPPED ? cudaHostAllocMapped : cudaHostAllocDefault) |
                              cudaHostAllocPortable);
      if (err == cudaSuccess) {
        std::lock_guard<std::mutex> lock(inst->pinned_mutex);
        inst->pinned.insert(*out);
      }
    } else {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, "unknown buffer kind " + std::to_string(kind));
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      *out = nullptr;
      size_t free_b = 0, total_b = 0;
      (void)cudaMemGetInfo(&free_b, &total_b);
      return inst->ctx.error(STRATA_ERR_OUT_OF_MEMORY,
                             std::string(kPluginName) + ": cannot allocate " + std::to_string(bytes >> 20) + " MiB of " +
                                 (kind == STRATA_BUFFER_DEVICE ? "device" : "page-locked host") + " memory on " +
                                 inst->ctx.device_name() + " (" + std::to_string(free_b >> 20) + " MiB free): " +
                                 cudaGetErrorString(err));
    }
    return nullptr;
  });
}

void buffer_free(void* c, uint32_t, void* buffer) {
  auto* inst = static_cast<Instance*>(c);
  if (buffer == nullptr) return;
  // Work on any stream may still use the buffer.
  (void)cudaDeviceSynchronize();
  bool was_pinned = false;
  {
    std::lock_guard<std::mutex> lock(inst->pinned_mutex);
    was_pinned = inst->pinned.erase(buffer) > 0;
  }
  if (was_pinned) {
    (void)cudaFreeHost(buffer);
  } else {
    (void)cudaFree(buffer);
  }
  (void)cudaGetLastError();
}

// A copy on the compute stream, waited for (after everything computed before, as DeviceMemory promises).
strata_status* copy(void* c, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind) {
  auto* inst = static_cast<Instance*>(c);
  std::lock_guard<std::mutex> lock(inst->ctx.mutex());
  if (strata_status* st = copy_async(c, device, dst, src, bytes, kind, nullptr)) return st;
  return guarded(inst, [&]() -> strata_status* {
    check_cuda(cudaStreamSynchronize(inst->ctx.stream()), "copy");
    return nullptr;
  });
}

strata_status* copy_async(void* c, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind,
                          strata_stream stream) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (bytes == 0) return nullptr;
    cudaMemcpyKind k;
    if (!copy_kind(kind, k)) return bad_copy_kind(inst, kind);
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    check_cuda(cudaMemcpyAsync(dst, src, bytes, k, stream_of(inst, stream)), "copy_async");
    return nullptr;
  });
}

// One runtime call for the batch where the runtime has one (cudaMemcpyBatchAsync, CUDA 13's form): a
// cudaMemcpyAsync costs the calling thread about 3 us, and the hybrid path's placing thread enqueues a MoE layer's
// misses before its pool starts. The sources are read in stream order, like cudaMemcpyAsync's. Elsewhere (HIP,
// older runtimes, a runtime that refuses the batch once) the copies go one by one.
strata_status* copy_batch_async(void* c, uint32_t device, void* const* dsts, const void* const* srcs,
                                const uint64_t* bytes, uint32_t count, uint32_t kind, strata_stream stream) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (count == 0) return nullptr;
    if (dsts == nullptr || srcs == nullptr || bytes == nullptr) {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT,
                             std::string(kPluginName) + ": copy_batch_async needs destinations, sources and sizes");
    }
    cudaMemcpyKind k;
    if (!copy_kind(kind, k)) return bad_copy_kind(inst, kind);
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    const cudaStream_t s = stream_of(inst, stream);
#if !defined(STRATA_GPU_HIP) && defined(CUDART_VERSION) && CUDART_VERSION >= 13000
    if (!inst->batch_refused.load(std::memory_order_relaxed)) {
      static_assert(std::is_same_v<size_t, uint64_t>, "the sizes pass as they are");
      cudaMemcpyAttributes attr{};
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
      size_t first = 0;
      const cudaError_t err = cudaMemcpyBatchAsync(dsts, srcs, bytes, count, &attr, &first, 1, s);
      if (err == cudaSuccess) return nullptr;
      (void)cudaGetLastError();  // not a sticky error: the copies go one by one from now on
      if (!inst->batch_refused.exchange(true)) {
        inst->ctx.log(STRATA_LOG_WARN, std::string(kPluginName) + ": cudaMemcpyBatchAsync refused a batch (" +
                                           cudaGetErrorName(err) + "); batched copies go one by one from now on");
      }
    }
#endif
    for (uint32_t i = 0; i < count; ++i) {
      if (bytes[i] != 0) check_cuda(cudaMemcpyAsync(dsts[i], srcs[i], bytes[i], k, s), "copy_batch_async");
    }
    return nullptr;
  });
}

strata_status* host_register(void* c, uint32_t device, void* ptr, uint64_t bytes, uint32_t flags) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (ptr == nullptr || bytes == 0) {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + ": host_register needs a pointer and a size");
    }
    if ((flags & ~(STRATA_REGISTER_READ_ONLY | STRATA_REGISTER_MAPPED)) != 0) {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + ": unknown host_register flags " + std::to_string(flags));
    }
    // Whole pages: the driver locks pages, and an unaligned range is rejected by some versions.
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(ptr) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + bytes + page - 1) & ~(page - 1);
    unsigned int f = cudaHostRegisterPortable;  // page-locked for every device: a peer card copies from it too
    if ((flags & STRATA_REGISTER_READ_ONLY) != 0) f |= cudaHostRegisterReadOnly;
    if ((flags & STRATA_REGISTER_MAPPED) != 0) f |= cudaHostRegisterMapped;
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    std::lock_guard<std::mutex> lock(inst->pinned_mutex);
    if (inst->registered.count(ptr) != 0) {
      return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + ": this memory is registered already");
    }
    const cudaError_t err = cudaHostRegister(reinterpret_cast<void*>(begin), end - begin, f);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return inst->ctx.error(STRATA_ERR_DEVICE,
                             std::string(kPluginName) + ": cannot page-lock " + std::to_string((end - begin) >> 20) +
                                 " MiB of host memory (" + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) +
                                 "); copies from it will run as pageable copies. Raise the locked-memory limit "
                                 "(ulimit -l) or free RAM to lock it");
    }
    inst->registered.emplace(ptr, reinterpret_cast<void*>(begin));
    return nullptr;
  });
}

void host_unregister(void* c, uint32_t, void* ptr) {
  auto* inst = static_cast<Instance*>(c);
  void* base = nullptr;
  {
    std::lock_guard<std::mutex> lock(inst->pinned_mutex);
    const auto it = inst->registered.find(ptr);
    if (it == inst->registered.end()) return;
    base = it->second;
    inst->registered.erase(it);
  }
  // Copies in flight may still read it.
  (void)cudaDeviceSynchronize();
  (void)cudaHostUnregister(base);
  (void)cudaGetLastError();
}

}  // namespace strata::gpu
