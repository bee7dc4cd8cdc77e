// ROUTER: per token, the k experts with the largest gate probability (+ selection bias) and their weights, in
// float by default or in double as the reference with canonical_double (route_tokens_f64ref), one small block a
// token (router_block.cuh has the arithmetic, shared with the fused MUL_MAT + ROUTER of fuse_router.cu).
#include <string>

#include "ops.hpp"
#include "router_block.cuh"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

template <class T, int P>
__device__ __forceinline__ void route_block(const RouterArgs& a) {
  extern __shared__ __align__(8) unsigned char router_smem[];
  __shared__ T partial_max[kRouterMaxWarps], partial_sum[kRouterMaxWarps];
  route_token<T, P, const float>(a, blockIdx.x, static_cast<int>(blockDim.x), reinterpret_cast<T*>(router_smem),
                                 partial_max, partial_sum);
}

template <int P>  // experts a thread
__global__ void __launch_bounds__(kRouterMaxThreads) route_tokens(RouterArgs a) {
  route_block<float, P>(a);
}
template <int P>
__global__ void __launch_bounds__(kRouterMaxThreads) route_tokens_f64ref(RouterArgs a) {
  route_block<double, P>(a);
}

}  // namespace

Check check_router(const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  if (auto e = format::check_matrix(logits, "src0 (logits)", GgmlType::F32)) return e;
  if (auto e = format::check_matrix(ids, "dst (ids)", GgmlType::I32)) return e;
  if (auto e = format::check_matrix(weights, "src2 (weights)", GgmlType::F32)) return e;
  const int64_t n_expert = logits.ne[0], k = op.i[0];
  if (n_expert > kRouterMaxExperts) {
    return "src0 (logits) has " + std::to_string(n_expert) + " experts (at most " + std::to_string(kRouterMaxExperts) + ")";
  }
  if (k < 1 || k > n_expert) return "i[0] (k) " + std::to_string(k) + " must be within 1.." + std::to_string(n_expert);
  if (op.i[1] < 0 || op.i[1] > 2)
    return "i[1] (gating) " + std::to_string(op.i[1]) + " (known: 0 softmax, 1 sigmoid, 2 softmax over the chosen)";
  // Backend 1.6's expert groups (DeepSeek-V3).
  if (op.i[3] > 1) {
    const int64_t n_group = op.i[3], topk_group = op.i[4];
    if (n_expert % n_group != 0 || topk_group < 1 || topk_group > n_group || k > topk_group * (n_expert / n_group)) {
      return "i[3] (expert groups) " + std::to_string(n_group) + " must divide the " + std::to_string(n_expert) +
             " experts, with i[4] (groups kept) " + std::to_string(topk_group) + " in 1..groups holding at least k = " +
             std::to_string(k) + " experts";
    }
  }
  if (ids.ne[0] != k || ids.ne[1] != logits.ne[1])
    return "dst (ids) must be [k, n_tok] = [" + std::to_string(k) + ", " + std::to_string(logits.ne[1]) + "]";
  if (weights.ne[0] != k || weights.ne[1] != logits.ne[1])
    return "src2 (weights) must be [k, n_tok] = [" + std::to_string(k) + ", " + std::to_string(logits.ne[1]) + "]";
  if (bias.data != nullptr) {
    if (auto e = format::check_rows(bias, "src1 (bias)", GgmlType::F32)) return e;
    if (bias.ne[0] != n_expert || format::row_count(bias) != 1)
      return std::string("src1 (bias) must be one row of n_expert values");
  }
  return std::nullopt;
}

void run_router(Context& ctx, const strata_op& op) {
  const RouterArgs a = router_args(op);
  const size_t smem = router_shared_bytes(a);
  const auto tokens = static_cast<unsigned>(op.src[0].ne[1]);
  const int per_thread = router_per_thread(a.n_expert);
  const auto threads = static_cast<unsigned>(router_threads(a.n_expert, per_thread));
  const bool f64 = ctx.options().canonical_double;
  auto* kernel = per_thread == 1 ? route_tokens<1> : route_tokens<kRouterPerThread>;
  if (f64) kernel = per_thread == 1 ? route_tokens_f64ref<1> : route_tokens_f64ref<kRouterPerThread>;
  kernel<<<tokens, threads, smem, ctx.stream()>>>(a);
  check_launch("ROUTER");
}

}  // namespace strata::gpu
