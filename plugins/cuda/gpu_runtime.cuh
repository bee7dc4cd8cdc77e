// The vendor shim: the plugin's sources are written once against CUDA's names; built as HIP (plugins/hip), this
// header maps those names onto HIP's. The warp width is explicit: 32 on NVIDIA, 64 on AMD's CDNA (gfx90a), the
// only AMD target Debian's ROCm 5.2 builds that we ship. Kernels never assume 32: they use kWarp.
#pragma once

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define STRATA_GPU_HIP 1
#define STRATA_GPU_VENDOR "AMD"

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaSetDevice hipSetDevice
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMemGetInfo hipMemGetInfo
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost hipHostMalloc
#define cudaHostAlloc hipHostMalloc
#define cudaHostAllocMapped hipHostMallocMapped
#define cudaHostAllocDefault hipHostMallocDefault
#define cudaHostAllocPortable hipHostMallocPortable
#define cudaFreeHost hipHostFree
#define cudaHostRegister hipHostRegister
#define cudaHostUnregister hipHostUnregister
#define cudaHostRegisterDefault hipHostRegisterDefault
#define cudaHostRegisterPortable hipHostRegisterPortable
// ROCm 5.2 has no read-only registration: a read-only file mapping then fails to register and is copied as
// pageable memory (the caller's fallback).
#define cudaHostRegisterReadOnly 0
#define cudaHostRegisterMapped hipHostRegisterMapped
#define cudaErrorHostMemoryAlreadyRegistered hipErrorHostMemoryAlreadyRegistered
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemcpy hipMemcpy
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStream_t hipStream_t
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamCreateWithPriority hipStreamCreateWithPriority
#define cudaDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphInstantiate(exec, graph, flags) hipGraphInstantiate(exec, graph, nullptr, nullptr, 0)
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventQuery hipEventQuery
#define cudaErrorNotReady hipErrorNotReady
#define cudaStreamWaitEvent hipStreamWaitEvent

// A kernel's attribute (HIP takes the kernel as a plain pointer).
template <class Kernel>
inline hipError_t cudaFuncSetAttribute(Kernel kernel, hipFuncAttribute attr, int value) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), attr, value);
}

namespace strata::gpu {
constexpr int kWarp = 64;  // CDNA wavefronts
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor(v, mask, kWarp); }
__device__ __forceinline__ int shfl_xor(int v, int mask) { return __shfl_xor(v, mask, kWarp); }
__device__ __forceinline__ float shfl(float v, int lane) { return __shfl(v, lane, kWarp); }
__device__ __forceinline__ int shfl(int v, int lane) { return __shfl(v, lane, kWarp); }
__device__ __forceinline__ float shfl_down(float v, int delta) { return __shfl_down(v, delta, kWarp); }
// Four signed 8-bit products summed into c (v_dot4_i32_i8 on gfx9).
__device__ __forceinline__ int dp4a(int a, int b, int c) { return __builtin_amdgcn_sdot4(a, b, c, false); }
// Nanoseconds of the device's constant clock, for stamps: s_memrealtime counts at 100 MHz on gfx9.
__device__ __forceinline__ unsigned long long clock_ns() { return __builtin_amdgcn_s_memrealtime() * 10ull; }
// A load that sees what other blocks of the kernel wrote before a fence (past the CU's non-coherent cache).
__device__ __forceinline__ double load_coherent(const double* p) { return *static_cast<const volatile double*>(p); }
}  // namespace strata::gpu

#else
#include <cuda_runtime.h>
#define STRATA_GPU_VENDOR "NVIDIA"

namespace strata::gpu {
constexpr int kWarp = 32;
__device__ __forceinline__ float shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
__device__ __forceinline__ int shfl_xor(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
__device__ __forceinline__ float shfl(float v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
__device__ __forceinline__ int shfl(int v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
__device__ __forceinline__ float shfl_down(float v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ int dp4a(int a, int b, int c) { return __dp4a(a, b, c); }
// A load that sees what other blocks of the kernel wrote before a fence: cached in L2 only (L1 is not coherent).
__device__ __forceinline__ double load_coherent(const double* p) { return __ldcg(p); }
// The global timer (nanoseconds, shared by every SM): the clock stamp the balancer reads.
__device__ __forceinline__ unsigned long long clock_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
}  // namespace strata::gpu
#endif
