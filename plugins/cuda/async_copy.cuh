// Copies from global to shared memory that a thread issues now and waits for later: on CUDA devices (sm_80 and
// up) cp.async, so that a block's next loads are in flight while it computes on what landed before; on AMD and in
// the host emulation of the kernels (tests/cuda_host) a plain copy at the call, which the waits then find done.
// Used by the flash attention kernels (attention_flash.cuh) and the tiled products (tiled_product.cu).
#pragma once

#include <cstdint>
#include <cstring>

#include "gpu_runtime.cuh"

#if defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define STRATA_CP_ASYNC 1
#else
#define STRATA_CP_ASYNC 0
#endif

namespace strata::gpu {

// 16 bytes from global to shared memory (both 16-byte aligned), zero-filled when `valid` is false; stage_wait()
// then waits for the thread's copies (a barrier after it makes them the block's).
__host__ __device__ __forceinline__ void copy16_async(void* dst_shared, const void* src, bool valid) {
#if STRATA_CP_ASYNC
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(dst_shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
#elif defined(__HIP_DEVICE_COMPILE__)
  *static_cast<uint4*>(dst_shared) = valid ? *static_cast<const uint4*>(src) : make_uint4(0u, 0u, 0u, 0u);
#else
  alignas(16) uint32_t w[4] = {0u, 0u, 0u, 0u};
  if (valid) std::memcpy(w, src, 16);
  std::memcpy(dst_shared, w, 16);
#endif
}

// 8 or 4 bytes from global to shared memory (both aligned to the size), zero-filled when `valid` is false: the
// q8_0 caches' raw blocks (34 bytes each: 8- or 4-byte pieces where a head's run of blocks allows).
template <int kBytes>
__host__ __device__ __forceinline__ void copy_small_async(void* dst_shared, const void* src, bool valid) {
  static_assert(kBytes == 4 || kBytes == 8, "cp.async.ca copies 4, 8 or 16 bytes");
#if STRATA_CP_ASYNC
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(dst_shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(kBytes), "r"(valid ? kBytes : 0)
               : "memory");
#elif defined(__HIP_DEVICE_COMPILE__)
  if constexpr (kBytes == 8) {
    *static_cast<uint2*>(dst_shared) = valid ? *static_cast<const uint2*>(src) : make_uint2(0u, 0u);
  } else {
    *static_cast<uint32_t*>(dst_shared) = valid ? *static_cast<const uint32_t*>(src) : 0u;
  }
#else
  alignas(8) unsigned char w[kBytes] = {};
  if (valid) std::memcpy(w, src, kBytes);
  std::memcpy(dst_shared, w, kBytes);
#endif
}

// Every copy the thread has issued has landed.
__host__ __device__ __forceinline__ void stage_wait() {
#if STRATA_CP_ASYNC
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The copies issued since the last commit as one group; stage_wait_until<N>: every group but the N most recent
// has landed (the thread's own copies).
__host__ __device__ __forceinline__ void stage_commit() {
#if STRATA_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__host__ __device__ __forceinline__ void stage_wait_until() {
#if STRATA_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// The end of a staging function's copies: waited for (`wait`), or committed as one group for stage_wait_until.
__host__ __device__ __forceinline__ void stage_end(bool wait) {
  if (wait) {
    stage_wait();
  } else {
    stage_commit();
  }
}

}  // namespace strata::gpu
