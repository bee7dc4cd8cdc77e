// COPY, SIGNAL and WAIT (plugin_api.h backend 1.3): a decode step captured as one graph hands each MoE layer's
// routes to the host (SIGNAL into mapped memory) and waits for its placement (WAIT on a flag the host sets), with
// no host synchronization in between. One thread spins on the flag; each read of mapped memory is a round trip
// over the bus, which paces the loop. The host must always set the flags it is waited on (the hybrid path does,
// on errors too): a GPU waits without a limit.
#include "ops.hpp"
#include "strata/format/flag_ops.hpp"

namespace strata::gpu {
namespace {

constexpr int kCopyThreads = 256;

__global__ void copy_kernel(const uint32_t* src, uint64_t src_stride, uint32_t* dst, uint64_t dst_stride, int64_t n0,
                            int64_t n1) {
  const int64_t n = n0 * n1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n0, c = i % n0;
    dst[r * dst_stride + c] = src[r * src_stride + c];
  }
}

// After the kernels before it (stream order); the fence makes their writes visible to the host before the flag.
// `stamp` (backend 1.5, or NULL): the clock as the flag is raised.
__global__ void signal_kernel(volatile int32_t* flag, int32_t value, unsigned long long* stamp) {
  if (stamp != nullptr) *stamp = clock_ns();
  __threadfence_system();
  *flag = value;
  __threadfence_system();
}

// The kernels after it start when it ends; the fence orders their reads after the flag's. `stamp` (backend 1.5, or
// NULL): the clock as the wait ends.
__global__ void wait_kernel(const volatile int32_t* flag, int32_t value, unsigned long long* stamp) {
  while (*flag < value) {
  }
  __threadfence_system();
  if (stamp != nullptr) *stamp = clock_ns();
}

}  // namespace

Check check_copy(const strata_op& op) { return format::check_copy(op); }
Check check_signal(const strata_op& op) { return format::check_signal(op); }
Check check_wait(const strata_op& op) { return format::check_wait(op); }

void run_copy(Context& ctx, const strata_op& op) {
  const strata_tensor &s = op.src[0], &d = op.dst;
  const int64_t n = s.ne[0] * s.ne[1];
  const auto blocks = static_cast<unsigned>((n + kCopyThreads - 1) / kCopyThreads < 1024 ? (n + kCopyThreads - 1) / kCopyThreads : 1024);
  copy_kernel<<<blocks, kCopyThreads, 0, ctx.stream()>>>(static_cast<const uint32_t*>(s.data), s.nb[1] / 4,
                                                          static_cast<uint32_t*>(d.data), d.nb[1] / 4, s.ne[0], s.ne[1]);
  check_launch("COPY");
}

void run_signal(Context& ctx, const strata_op& op) {
  signal_kernel<<<1, 1, 0, ctx.stream()>>>(static_cast<volatile int32_t*>(op.dst.data), op.i[0],
                                            reinterpret_cast<unsigned long long*>(format::signal_stamp(op)));
  check_launch("SIGNAL");
}

void run_wait(Context& ctx, const strata_op& op) {
  wait_kernel<<<1, 1, 0, ctx.stream()>>>(static_cast<const volatile int32_t*>(op.src[0].data), op.i[0],
                                          reinterpret_cast<unsigned long long*>(format::wait_stamp(op)));
  check_launch("WAIT");
}

}  // namespace strata::gpu
