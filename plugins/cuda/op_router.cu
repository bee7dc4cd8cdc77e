// ROUTER: per token, the k experts with the largest gate probability (+ selection bias) and their weights, in
// double as the reference: p_e = softmax(l)_e or sigmoid(l_e); order by p_e + bias_e descending, ties to the
// lower expert id (the reference's stable sort); weight = p_e [/ sum of the k chosen p, summed in rank order]
// * f[0], rounded to float. One block per token; an expert's rank is the number of experts ahead of it.
#include <string>

#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 128;
constexpr int64_t kMaxExperts = 1024;  // shared memory: 8 bytes of probability and 8 of score per expert

struct RouterArgs {
  const char* logits;
  const float* bias;  // nullptr: no selection bias
  char* ids;
  char* weights;
  uint64_t l_stride, id_stride, w_stride;
  int n_expert, k;
  bool sigmoid, normalize;
  double factor;
};

__global__ void route_tokens(RouterArgs a) {
  extern __shared__ double smem[];
  double* prob = smem;                  // [n_expert]
  double* score = smem + a.n_expert;    // [n_expert]
  double* chosen = score + a.n_expert;  // [k] probabilities in rank order
  __shared__ double partial[kBlock / 32];
  __shared__ double norm;
  const int tid = static_cast<int>(threadIdx.x);
  const auto* l = reinterpret_cast<const float*>(a.logits + static_cast<uint64_t>(blockIdx.x) * a.l_stride);
  if (a.sigmoid) {
    for (int e = tid; e < a.n_expert; e += kBlock) prob[e] = 1.0 / (1.0 + exp(-static_cast<double>(l[e])));
  } else {
    double m = -INFINITY;
    for (int e = tid; e < a.n_expert; e += kBlock) m = fmax(m, static_cast<double>(l[e]));
    m = block_max(m, partial);
    double total = 0.0;
    for (int e = tid; e < a.n_expert; e += kBlock) {
      prob[e] = exp(static_cast<double>(l[e]) - m);
      total += prob[e];
    }
    total = block_sum(total, partial);
    for (int e = tid; e < a.n_expert; e += kBlock) prob[e] = prob[e] / total;
  }
  for (int e = tid; e < a.n_expert; e += kBlock)
    score[e] = prob[e] + (a.bias != nullptr ? static_cast<double>(a.bias[e]) : 0.0);
  __syncthreads();
  auto* ids = reinterpret_cast<int32_t*>(a.ids + static_cast<uint64_t>(blockIdx.x) * a.id_stride);
  auto* w = reinterpret_cast<float*>(a.weights + static_cast<uint64_t>(blockIdx.x) * a.w_stride);
  for (int e = tid; e < a.n_expert; e += kBlock) {
    const double s = score[e];
    int rank = 0;
    for (int o = 0; o < a.n_expert; ++o) rank += (score[o] > s) || (score[o] == s && o < e);
    if (rank < a.k) {
      ids[rank] = e;
      chosen[rank] = prob[e];
    }
  }
  __syncthreads();
  if (tid == 0) {
    double sum = 0.0;
    for (int j = 0; j < a.k; ++j) sum += chosen[j];
    norm = sum;
  }
  __syncthreads();
  for (int j = tid; j < a.k; j += kBlock) {
    double v = chosen[j];
    if (a.normalize) v /= norm;
    w[j] = static_cast<float>(v * a.factor);
  }
}

}  // namespace

Check check_router(const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  if (auto e = format::check_matrix(logits, "src0 (logits)", GgmlType::F32)) return e;
  if (auto e = format::check_matrix(ids, "dst (ids)", GgmlType::I32)) return e;
  if (auto e = format::check_matrix(weights, "src2 (weights)", GgmlType::F32)) return e;
  const int64_t n_expert = logits.ne[0], k = op.i[0];
  if (n_expert > kMaxExperts) {
    return "src0 (logits) has " + std::to_string(n_expert) + " experts (at most " + std::to_string(kMaxExperts) + ")";
  }
  if (k < 1 || k > n_expert) return "i[0] (k) " + std::to_string(k) + " must be within 1.." + std::to_string(n_expert);
  if (op.i[1] != 0 && op.i[1] != 1)
    return "i[1] (gating) " + std::to_string(op.i[1]) + " (known: 0 softmax, 1 sigmoid)";
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
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  RouterArgs a{static_cast<const char*>(logits.data),
               static_cast<const float*>(bias.data),
               static_cast<char*>(ids.data),
               static_cast<char*>(weights.data),
               logits.nb[1],
               ids.nb[1],
               weights.nb[1],
               static_cast<int>(logits.ne[0]),
               op.i[0],
               op.i[1] == 1,
               op.i[2] != 0,
               static_cast<double>(op.f[0])};
  const size_t smem = (2 * static_cast<size_t>(a.n_expert) + static_cast<size_t>(a.k)) * sizeof(double);
  route_tokens<<<static_cast<unsigned>(logits.ne[1]), kBlock, smem, ctx.stream()>>>(a);
  check_launch("ROUTER");
}

}  // namespace strata::gpu
