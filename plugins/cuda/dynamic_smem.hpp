// Kernels that take more than 48 KB of dynamic shared memory a block must be allowed it first, by a function
// attribute that the runtime keeps per device (each device's context has its own copy of the kernel). A process
// that drives two cards (runtime.peer_device, a layer split) needs it set on both, so the opt-in is remembered per
// (kernel, device), not once per process.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "context.hpp"
#include "gpu_runtime.cuh"

namespace strata::gpu {

// Allows `Kernel` `bytes` of dynamic shared memory on the context's device (the current one: the plugin selects it
// before running ops), once per device; false when the device refuses (the caller then takes a smaller form, or
// the launch reports the error). Devices past 63 are asked every time.
template <auto Kernel>
bool allow_dynamic_smem(const Context& ctx, size_t bytes) {
  if (bytes <= 48 * 1024) return true;
  static std::atomic<uint64_t> allowed{0};  // bit d: done on device d
  const int device = ctx.options().device;
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit != 0 && (allowed.load(std::memory_order_acquire) & bit) != 0) return true;
  const int value = static_cast<int>(bytes);
  if (cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, value) != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so that the next launch's check does not report it
    return false;
  }
  allowed.fetch_or(bit, std::memory_order_release);
  return true;
}

}  // namespace strata::gpu
