// Programmatic dependent launch (Hopper and later, CUDA): a kernel launched with launch_dependent may start while
// the kernel before it on the stream is still running, so at one token, where every kernel is short, the next
// kernel's launch, block scheduling and weight fetches overlap the previous kernel's tail instead of following it.
//
// The contract for a kernel launched this way, in every block and before any return:
//   1. before wait_for_inputs(): only reads of data no earlier kernel writes (weights, norm vectors), and
//      prefetch_l2 of such data; no writes at all;
//   2. wait_for_inputs(): returns once the previous kernel has completed and its writes are visible. Since that
//      kernel waited for its own predecessor before completing, everything earlier is complete too;
//   3. start_dependents() after the wait: lets the next kernel launch now, so at most one grid waits ahead.
// A kernel launched with <<<>>> may call all three: the wait returns at once and the rest does nothing. On HIP
// and on GPUs before sm_90 the launch is a plain one and the three calls do nothing.
#pragma once

#include <cstdint>
#include <utility>

#include "context.hpp"
#include "gpu_runtime.cuh"

namespace strata::gpu {

__device__ __forceinline__ void wait_for_inputs() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void start_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks for [p, p + bytes) in L2, one 128-byte line per thread of the block at a time (no registers wait on it).
template <int THREADS>
__device__ __forceinline__ void prefetch_l2(const void* p, uint64_t bytes) {
#if defined(__CUDA_ARCH__)
  const auto* c = static_cast<const unsigned char*>(p);
  for (uint64_t off = static_cast<uint64_t>(threadIdx.x) * 128u; off < bytes; off += THREADS * 128u) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
  }
#else
  (void)p;
  (void)bytes;
#endif
}

// Launches kernel(args...) on the context's stream, overlapped with the kernel before it where the context
// allows (Options::overlap and an sm_90+ GPU); a plain launch otherwise.
template <class... Params, class... Args>
void launch_dependent(const Context& ctx, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                      Args&&... args) {
#if defined(STRATA_GPU_HIP)
  kernel<<<grid, block, shared, ctx.stream()>>>(std::forward<Args>(args)...);
#else
  if (!ctx.overlap_launches()) {
    kernel<<<grid, block, shared, ctx.stream()>>>(std::forward<Args>(args)...);
    return;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = ctx.stream();
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  (void)cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);  // check_launch reads the error
#endif
}

}  // namespace strata::gpu
