// Fusion: the MoE router's two ops in one launch,
//   MUL_MAT(logits <- router weight (f32, f16 or bf16) x xn)  ROUTER(ids, weights <- logits [, bias])
// for the windows whose MUL_MAT takes the staged path in one launch (up to kStageMaxTokens tokens: a decode step, a
// short verify window). Every block computes and writes its rows of the logits exactly as the MUL_MAT's staged
// kernel does (mul_mat_staged.cuh; the logits stay an output another op may read), then counts itself done on a
// counter in ScratchSlot::Counters; the block that finishes last routes every token of the window with the ROUTER
// kernel's arithmetic (router_block.cuh) on the logits the blocks wrote. So the bytes of the logits, ids and
// weights are those of the two ops run one by one, and a decode step saves the ROUTER's launch and its wait on the
// MUL_MAT.
// A grouped router (backend 1.6's i[3] > 1, DeepSeek-V3) is not fused: it runs as its own op.
#include <algorithm>
#include <type_traits>

#include "dependent_launch.cuh"
#include "fusion_match.hpp"
#include "matvec.cuh"
#include "mul_mat_staged.cuh"
#include "ops.hpp"
#include "router_block.cuh"

namespace strata::gpu {
namespace {

static_assert(kRouterMaxThreads <= kStageThreads, "the last block routes with the staged kernel's threads");

struct StagedArgs {
  const uint8_t* w;
  uint64_t w_stride;
  int rows, rpb, n_in;
  bool vec4;
  const float* x;
  int64_t x_stride;
  int n_tok;
  float* dst;
  int64_t dst_stride;
};

template <class T, FloatWeight W, int NT, int P>
__device__ __forceinline__ void mul_mat_route(const StagedArgs& m, const RouterArgs& r, unsigned* done) {
  extern __shared__ float4 staged_quads[];  // the staged rows, then the router's scores
  __shared__ T partial_max[kStageThreads / kWarp], partial_sum[kStageThreads / kWarp];  // one a warp
  __shared__ bool last;
  {  // the block's weight rows are the model's: on their way to L2 before the previous kernel ends
    const int row0 = static_cast<int>(blockIdx.x) * m.rpb;
    const int n = min(m.rpb, m.rows - row0);
    if (n > 0) prefetch_l2<kStageThreads>(m.w + static_cast<uint64_t>(row0) * m.w_stride, static_cast<uint64_t>(n) * m.w_stride);
  }
  wait_for_inputs();
  start_dependents();
  staged_dot_rows<W, NT>(m.w, m.w_stride, m.rows, m.rpb, m.n_in, m.vec4, m.x, m.x_stride, m.n_tok, m.dst,
                         m.dst_stride, reinterpret_cast<float*>(staged_quads));
  // This block's logits reach the device's coherent level before the block counts itself done. atomicInc wraps
  // the counter to 0 at the last block: the next launch (a graph replay too) finds it 0 again.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicInc(done, gridDim.x - 1) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  // Every block's logits are written; the last block reads them through volatile loads (never a stale line). It
  // routes as many tokens at once as its threads hold (two of 128 experts), each with its own threads, scores and
  // warps' partials: a token's arithmetic is the same whichever threads take it.
  // (The double form keeps one token at a time: its registers are tight.)
  auto* smem = reinterpret_cast<T*>(staged_quads);
  const int n_threads = router_threads(r.n_expert, P);
  if constexpr (!std::is_same_v<T, float>) {
    for (int t = 0; t < m.n_tok; ++t) {
      if (t > 0) __syncthreads();  // the previous token's shared memory is read to the end
      route_token<T, P, const volatile float, false>(r, t, n_threads, smem, partial_max, partial_sum);
    }
    return;
  }
  const int at_once = kStageThreads / n_threads, group = static_cast<int>(threadIdx.x) / n_threads;
  const size_t token_room = router_shared_bytes(r) / sizeof(T);
  for (int t0 = 0; t0 < m.n_tok; t0 += at_once) {
    if (t0 > 0) __syncthreads();  // the previous tokens' shared memory is read to the end
    const int t = t0 + group;
    const bool routes = group < at_once && t < m.n_tok;
    route_token<T, P, const volatile float, false, true>(r, routes ? t : t0, n_threads,
                                                         smem + (routes ? group : 0) * token_room, partial_max,
                                                         partial_sum, group * n_threads, routes);
  }
}

// The router's arithmetic in float (the default) or in double (canonical_double), as op_router.cu's kernels.
template <FloatWeight W, int NT, int P>
__global__ void __launch_bounds__(kStageThreads) mul_mat_route_kernel(StagedArgs m, RouterArgs r, unsigned* done) {
  mul_mat_route<float, W, NT, P>(m, r, done);
}
template <FloatWeight W, int NT, int P>
__global__ void __launch_bounds__(kStageThreads) mul_mat_route_kernel_f64ref(StagedArgs m, RouterArgs r,
                                                                            unsigned* done) {
  mul_mat_route<double, W, NT, P>(m, r, done);
}

template <FloatWeight W, int NT>
void launch(const StagedArgs& m, const RouterArgs& r, unsigned* done, unsigned blocks, size_t smem,
            const Context& ctx) {
  const bool f64 = ctx.options().canonical_double;
  if (router_per_thread(r.n_expert) == 1) {
    auto* kernel = mul_mat_route_kernel<W, NT, 1>;
    if (f64) kernel = mul_mat_route_kernel_f64ref<W, NT, 1>;
    launch_dependent(ctx, kernel, blocks, kStageThreads, smem, m, r, done);
  } else {
    auto* kernel = mul_mat_route_kernel<W, NT, kRouterPerThread>;
    if (f64) kernel = mul_mat_route_kernel_f64ref<W, NT, kRouterPerThread>;
    launch_dependent(ctx, kernel, blocks, kStageThreads, smem, m, r, done);
  }
}

}  // namespace

size_t fuse_mul_mat_router(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  if (i + 1 >= n || ops[i].kind != STRATA_OP_MUL_MAT || ops[i + 1].kind != STRATA_OP_ROUTER) return 0;
  const strata_op &mm = ops[i], &route = ops[i + 1];
  const strata_tensor &w = mm.src[0], &x = mm.src[1], &logits = mm.dst;
  const strata_tensor &bias = route.src[1], &weights = route.src[2], &ids = route.dst;
  if (!same_tensor(logits, route.src[0]) || check_mul_mat(mm) || check_router(route)) return 0;
  if (route.i[3] > 1) return 0;  // expert groups: the ROUTER op's kernel (route_token's group code is left out here)
  if (!with_float_weight(w.type, [](auto) {}) || x.ne[1] < 1 || w.ne[1] < 1 || w.ne[2] != 1) return 0;
  const StagedPlan plan = staged_plan(w, x);
  if (!plan.staged || x.ne[1] > kStageMaxTokens) return 0;  // one launch stages every token of the window
  // Each output apart from everything else the launch reads or writes (the ops' order is then the kernel's).
  for (const strata_tensor* out : {&logits, &ids, &weights}) {
    for (const strata_tensor* other : {&w, &x, &bias, &logits, &ids, &weights}) {
      if (other != out && !disjoint(*out, *other)) return 0;
    }
  }

  forget_quantized_writes(ctx, ops + i, 2);
  auto* done = static_cast<unsigned*>(ctx.scratch(ScratchSlot::Counters, sizeof(unsigned)));
  const StagedArgs m{static_cast<const uint8_t*>(w.data),
                     w.nb[1],
                     static_cast<int>(w.ne[1]),
                     plan.rows_per_block,
                     static_cast<int>(w.ne[0]),
                     plan.vec4,
                     static_cast<const float*>(x.data),
                     static_cast<int64_t>(x.nb[1] / sizeof(float)),
                     static_cast<int>(x.ne[1]),
                     static_cast<float*>(logits.data),
                     static_cast<int64_t>(logits.nb[1] / sizeof(float))};
  const RouterArgs r = router_args(route);
  // The last block's room: the scores of as many tokens as it routes at once (mul_mat_route).
  const int at_once = ctx.options().canonical_double
                          ? 1
                          : std::min<int>(kStageThreads / router_threads(r.n_expert, router_per_thread(r.n_expert)),
                                          static_cast<int>(x.ne[1]));
  const size_t smem = std::max<size_t>(plan.shared_bytes, static_cast<size_t>(at_once) * router_shared_bytes(r));
  // Tokens a pass as the MUL_MAT's staged kernel takes them (tokens_per_pass: 1, 2 or 4 here).
  with_float_weight(w.type, [&](auto wt) {
    constexpr FloatWeight W = decltype(wt)::value;
    if (m.n_tok == 1) {
      launch<W, 1>(m, r, done, plan.blocks, smem, ctx);
    } else if (m.n_tok == 2) {
      launch<W, 2>(m, r, done, plan.blocks, smem, ctx);
    } else {
      launch<W, 4>(m, r, done, plan.blocks, smem, ctx);
    }
  });
  check_launch("MUL_MAT + ROUTER (fused)");
  return 2;
}

}  // namespace strata::gpu
