// ROUTER: per token, the k experts with the largest gate probability (+ selection bias) and their weights, in
// double as the reference: p_e = softmax(l)_e or sigmoid(l_e); order by p_e + bias_e descending, ties to the
// lower expert id (the reference's stable sort); weight = p_e [/ sum of the k chosen p, summed in rank order]
// * f[0], rounded to float. One small block per token: one expert a thread up to kMaxThreads experts (a decode
// token's 128 experts take 4 warps), else kPerThread experts a thread; each thread keeps its experts'
// probabilities in registers, an expert's rank is the number of experts ahead of it (every thread scans the
// scores in shared memory), and the block meets at four barriers only (maximum, sum, scores, chosen).
#include <string>

#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kPerThread = 4;  // experts a thread at most (past kMaxThreads experts)
constexpr int64_t kMaxExperts = 1024;
constexpr int kMaxWarps = static_cast<int>(kMaxExperts / (kPerThread * kWarp)) > 0
                              ? static_cast<int>(kMaxExperts / (kPerThread * kWarp))
                              : 1;
constexpr int kMaxThreads = kMaxWarps * kWarp;

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

// Warp maxima (resp. sums) meet in `partial`, one value a warp, after one barrier; every thread adds the warps'
// values in warp order, so all threads hold the same bits.
__device__ __forceinline__ double across_warps_max(double v, double* partial) {
  v = warp_max(v);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = v;
  __syncthreads();
  double best = partial[0];
  for (unsigned w = 1; w < blockDim.x / kWarp; ++w) best = fmax(best, partial[w]);
  return best;
}

__device__ __forceinline__ double across_warps_sum(double v, double* partial) {
  v = warp_sum(v);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = v;
  __syncthreads();
  double total = partial[0];
  for (unsigned w = 1; w < blockDim.x / kWarp; ++w) total += partial[w];
  return total;
}

template <int P>  // experts a thread
__global__ void __launch_bounds__(kMaxThreads) route_tokens(RouterArgs a) {
  extern __shared__ double smem[];
  double* score = smem;                 // [n_expert]
  double* chosen = smem + a.n_expert;   // [k] probabilities in rank order
  __shared__ double partial_max[kMaxWarps], partial_sum[kMaxWarps];
  const int tid = static_cast<int>(threadIdx.x), n_threads = static_cast<int>(blockDim.x);
  const auto* l = reinterpret_cast<const float*>(a.logits + static_cast<uint64_t>(blockIdx.x) * a.l_stride);
  // The bias is read with the logits: a load after the first barrier would wait a second memory round trip.
  double p[P], b[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int e = tid + j * n_threads;
    p[j] = e < a.n_expert ? static_cast<double>(l[e]) : -INFINITY;
    b[j] = e < a.n_expert && a.bias != nullptr ? static_cast<double>(a.bias[e]) : 0.0;
  }
  if (a.sigmoid) {
#pragma unroll
    for (int j = 0; j < P; ++j) p[j] = 1.0 / (1.0 + exp(-p[j]));
  } else {
    double m = p[0];
#pragma unroll
    for (int j = 1; j < P; ++j) m = fmax(m, p[j]);
    m = across_warps_max(m, partial_max);
    double total = 0.0;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      if (tid + j * n_threads < a.n_expert) {
        p[j] = exp(p[j] - m);
        total += p[j];
      }
    }
    total = across_warps_sum(total, partial_sum);
#pragma unroll
    for (int j = 0; j < P; ++j) p[j] = p[j] / total;
  }
  double s[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int e = tid + j * n_threads;
    s[j] = 0.0;
    if (e < a.n_expert) {
      s[j] = p[j] + b[j];
      score[e] = s[j];
    }
  }
  __syncthreads();
  // Expert o is ahead of e when its score is larger, or equal with o < e: for o < e that is score >= s, else
  // score > s (both false for a NaN on either side, as the two-part test).
  int rank[P];
#pragma unroll
  for (int j = 0; j < P; ++j) rank[j] = 0;
#pragma unroll 4
  for (int o = 0; o < a.n_expert; ++o) {
    const double so = score[o];
#pragma unroll
    for (int j = 0; j < P; ++j) rank[j] += o < tid + j * n_threads ? so >= s[j] : so > s[j];
  }
  auto* ids = reinterpret_cast<int32_t*>(a.ids + static_cast<uint64_t>(blockIdx.x) * a.id_stride);
  auto* w = reinterpret_cast<float*>(a.weights + static_cast<uint64_t>(blockIdx.x) * a.w_stride);
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int e = tid + j * n_threads;
    if (e < a.n_expert && rank[j] < a.k) {
      ids[rank[j]] = e;
      chosen[rank[j]] = p[j];
    }
  }
  __syncthreads();
  // Every writing thread sums the chosen in rank order itself (the same bits in each): no further barrier.
  double norm = 1.0;
  if (a.normalize && tid < a.k) {
    norm = 0.0;
    for (int j = 0; j < a.k; ++j) norm += chosen[j];
  }
  for (int j = tid; j < a.k; j += n_threads) {
    double v = chosen[j];
    if (a.normalize) v /= norm;
    w[j] = static_cast<float>(v * a.factor);
  }
}

// Threads a token: whole warps, enough for `per_thread` experts a thread.
int router_threads(int n_expert, int per_thread) {
  const int per_warp = per_thread * kWarp;
  return kWarp * ((n_expert + per_warp - 1) / per_warp);
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
  const size_t smem = (static_cast<size_t>(a.n_expert) + static_cast<size_t>(a.k)) * sizeof(double);
  const auto tokens = static_cast<unsigned>(logits.ne[1]);
  if (a.n_expert <= kMaxThreads) {
    const auto threads = static_cast<unsigned>(router_threads(a.n_expert, 1));
    route_tokens<1><<<tokens, threads, smem, ctx.stream()>>>(a);
  } else {
    const auto threads = static_cast<unsigned>(router_threads(a.n_expert, kPerThread));
    route_tokens<kPerThread><<<tokens, threads, smem, ctx.stream()>>>(a);
  }
  check_launch("ROUTER");
}

}  // namespace strata::gpu
