// ROUTER's per-token arithmetic, shared by op_router.cu (one block a token) and the fused MUL_MAT + ROUTER
// (fuse_router.cu, whose last block routes the logits the launch just wrote), so both give the same bits.
//
// Per token, the k experts with the largest gate probability (+ selection bias) and their weights: p_e =
// softmax(l)_e or sigmoid(l_e), or l_e itself (gating 2, whose weights are then the softmax over the k chosen
// logits); order by p_e + bias_e descending, ties to the lower expert id (the reference's
// stable sort); weight = p_e [/ sum of the k chosen p, summed in rank order] * f[0]. T is the arithmetic: float by
// default (exp_c; softmax: m = max l, p_e = exp_c(l_e - m) / total with total summed in the block's fixed order
// (each thread its experts in order, the warp's xor butterfly, the warps in order); sigmoid: 1 / (1 + exp_c(-l)),
// IEEE divisions), double with canonical_double (the `_f64ref` kernels: the library's exp, rounded to float once,
// as the reference). The token's first n_threads threads (whole warps, router_threads) take one expert each up to kMaxThreads
// experts (a decode token's 128 experts take 4 warps), else kPerThread experts each; each keeps its experts'
// probabilities in registers, an expert's rank is the number of experts ahead of it (every thread scans the scores
// in shared memory), and the block meets at four barriers only (maximum, sum, scores, chosen). Threads of the
// block past n_threads only join the barriers.
#pragma once

#include <cmath>
#include <cstdint>

#include "canonical_math.cuh"
#include "gpu_runtime.cuh"
#include "strata/plugin_api.h"
#include "warp_reduce.cuh"

namespace strata::gpu {

constexpr int kRouterPerThread = 4;  // experts a thread at most (past kRouterMaxThreads experts)
constexpr int64_t kRouterMaxExperts = 1024;
constexpr int kRouterMaxWarps = static_cast<int>(kRouterMaxExperts / (kRouterPerThread * kWarp)) > 0
                                    ? static_cast<int>(kRouterMaxExperts / (kRouterPerThread * kWarp))
                                    : 1;
constexpr int kRouterMaxThreads = kRouterMaxWarps * kWarp;

struct RouterArgs {
  const char* logits;
  const float* bias;  // nullptr: no selection bias
  char* ids;
  char* weights;
  uint64_t l_stride, id_stride, w_stride;
  int n_expert, k;
  bool sigmoid, normalize;
  bool chosen_softmax;  // gating 2 (gpt-oss): the logits choose, the weights are the softmax over the chosen k
  float factor;
  int n_group;     // backend 1.6 (DeepSeek-V3): expert groups (1: none), n_expert / n_group consecutive ids each
  int topk_group;  // the groups kept (n_group > 1)
};

// A ROUTER op's arguments (its check passed).
inline RouterArgs router_args(const strata_op& op) {
  const strata_tensor &logits = op.src[0], &bias = op.src[1], &weights = op.src[2], &ids = op.dst;
  return {static_cast<const char*>(logits.data),
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
          op.i[1] == 2,
          op.f[0],
          op.i[3] > 1 ? op.i[3] : 1,
          op.i[3] > 1 ? op.i[4] : 0};
}

// Experts a thread: one up to kRouterMaxThreads experts, else kRouterPerThread.
inline int router_per_thread(int n_expert) { return n_expert <= kRouterMaxThreads ? 1 : kRouterPerThread; }

// Threads a token: whole warps, enough for `per_thread` experts a thread.
__host__ __device__ inline int router_threads(int n_expert, int per_thread) {
  const int per_warp = per_thread * kWarp;
  return kWarp * ((n_expert + per_warp - 1) / per_warp);
}

// Dynamic shared memory of a token: its scores, the chosen probabilities and the groups' scores (doubles, or floats
// in the same room).
__host__ __device__ inline size_t router_shared_bytes(const RouterArgs& a) {
  const size_t groups = a.n_group > 1 ? static_cast<size_t>(a.n_group) : 0;
  return (static_cast<size_t>(a.n_expert) + static_cast<size_t>(a.k) + groups) * sizeof(double);
}

// ---- expert groups (backend 1.6, DeepSeek-V3), as the reference: a group's score is the sum of its two largest
// scores p_e + bias_e (its one when it has one expert); the topk_group best groups are kept, ties to the lower
// group; the k experts are then chosen among the kept groups' alone (k is at most their number of experts, so the
// other experts' order never matters). ----

// Is item o (score so) ahead of item e (score s) in a descending stable order? o_first: o's index is below e's.
template <class T>
__host__ __device__ __forceinline__ bool router_ahead(T so, T s, bool o_first) {
  return o_first ? so >= s : so > s;
}

// The score of the group whose n scores are v[0..n): the sum of its two largest (the largest when n == 1).
template <class T>
__host__ __device__ __forceinline__ T router_group_score(const T* v, int n) {
  T b1 = v[0], b2 = -static_cast<T>(INFINITY);
  for (int i = 1; i < n; ++i) {
    const T x = v[i];
    if (x > b1) {
      b2 = b1;
      b1 = x;
    } else if (x > b2) {
      b2 = x;
    }
  }
  return n >= 2 ? b1 + b2 : b1;
}

// Whether group g is among the topk_group best of the n_group scores gscore[] (ties to the lower group).
template <class T>
__host__ __device__ __forceinline__ bool router_group_kept(const T* gscore, int n_group, int g, int topk_group) {
  int rank = 0;
  const T s = gscore[g];
  for (int o = 0; o < n_group; ++o) rank += o != g && router_ahead(gscore[o], s, o < g) ? 1 : 0;
  return rank < topk_group;
}

__device__ __forceinline__ float router_excluded(float) { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double router_excluded(double) { return __longlong_as_double(0x7ff8000000000000ll); }

__device__ __forceinline__ float router_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double router_max(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ float router_exp(float x) { return exp_c(x); }
__device__ __forceinline__ double router_exp(double x) { return exp(x); }
__device__ __forceinline__ float router_div(float a, float b) { return div_c(a, b); }
__device__ __forceinline__ double router_div(double a, double b) { return a / b; }

// Warp maxima (resp. sums) of the token's n_warps warps (the block's warps warp0 .. warp0 + n_warps - 1) meet in
// `partial`, one value at each warp's index in the block (threads of no token, routes false, write nothing), after
// one barrier (every thread of the block calls it); every thread adds those warps' values in warp order, so all of
// the token's threads hold the same bits.
template <class T, bool kShared>
__device__ __forceinline__ T router_warps_max(T v, T* partial, int warp0, int n_warps, bool routes) {
  v = warp_max(v);
  const int w_block = static_cast<int>(threadIdx.x / kWarp);
  if constexpr (kShared) {
    if (routes && threadIdx.x % kWarp == 0 && w_block >= warp0 && w_block < warp0 + n_warps) partial[w_block] = v;
  } else {
    if (threadIdx.x % kWarp == 0 && w_block < n_warps) partial[w_block] = v;
  }
  __syncthreads();
  T best = partial[kShared ? warp0 : 0];
  for (int w = 1; w < n_warps; ++w) best = router_max(best, partial[(kShared ? warp0 : 0) + w]);
  return best;
}

template <class T, bool kShared>
__device__ __forceinline__ T router_warps_sum(T v, T* partial, int warp0, int n_warps, bool routes) {
  v = warp_sum(v);
  const int w_block = static_cast<int>(threadIdx.x / kWarp);
  if constexpr (kShared) {
    if (routes && threadIdx.x % kWarp == 0 && w_block >= warp0 && w_block < warp0 + n_warps) partial[w_block] = v;
  } else {
    if (threadIdx.x % kWarp == 0 && w_block < n_warps) partial[w_block] = v;
  }
  __syncthreads();
  T total = partial[kShared ? warp0 : 0];
  for (int w = 1; w < n_warps; ++w) total += partial[(kShared ? warp0 : 0) + w];
  return total;
}

// Routes token `token` with n_threads threads (router_threads(n_expert, P), at most kRouterMaxThreads) starting at
// the block's thread `first` (a multiple of kWarp; a block may route several tokens at once, each with its own
// threads, `smem` and warps' entries of the partials); every thread of the block calls it, those of no token with
// routes false. `smem` holds router_shared_bytes, `partial_max` and `partial_sum` a value of T for each of the
// block's warps (kRouterMaxWarps at most). Logit is `const float` or, where other blocks of the same launch wrote
// the logits, `const volatile float` (read from the coherent level, not a stale cache line).
// kGroups: the expert groups' code is compiled in (op_router.cu); the fused MUL_MAT + ROUTER leaves it out (its
// registers are tight: a grouped router runs as its own op there).
// kShared: the block routes several tokens at once (first and routes as above); without it the token's threads are
// the block's first n_threads (first and routes unused).
template <class T, int P, class Logit, bool kGroups = true, bool kShared = false>
__device__ __forceinline__ void route_token(const RouterArgs& a, int64_t token, int n_threads, T* smem,
                                            T* partial_max, T* partial_sum, int first = 0, bool routes = true) {
  T* score = smem;                // [n_expert]
  T* chosen = smem + a.n_expert;  // [k] probabilities in rank order
  const int tid = static_cast<int>(threadIdx.x) - (kShared ? first : 0), n_warps = n_threads / kWarp;
  const int warp0 = kShared && routes ? first / kWarp : 0;  // threads of no token read warp 0's entries, in range
  const bool active = kShared ? routes && tid >= 0 && tid < n_threads : tid < n_threads;
  auto* l = reinterpret_cast<Logit*>(a.logits + static_cast<uint64_t>(token) * a.l_stride);
  // The bias is read with the logits: a load after the first barrier would wait a second memory round trip.
  T p[P], b[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int e = tid + j * n_threads;
    const bool mine = active && e < a.n_expert;
    p[j] = mine ? static_cast<T>(l[e]) : static_cast<T>(-INFINITY);
    b[j] = mine && a.bias != nullptr ? static_cast<T>(a.bias[e]) : T(0);
  }
  if (a.sigmoid) {
#pragma unroll
    for (int j = 0; j < P; ++j) p[j] = router_div(T(1), T(1) + router_exp(-p[j]));
  } else if (!a.chosen_softmax) {  // gating 2 chooses by the logits themselves (block-uniform: no barrier skipped)
    T m = p[0];
#pragma unroll
    for (int j = 1; j < P; ++j) m = router_max(m, p[j]);
    m = router_warps_max<T, kShared>(m, partial_max, warp0, n_warps, routes);
    T total = 0;
#pragma unroll
    for (int j = 0; j < P; ++j) {
      if (active && tid + j * n_threads < a.n_expert) {
        p[j] = router_exp(p[j] - m);
        total += p[j];
      }
    }
    total = router_warps_sum<T, kShared>(total, partial_sum, warp0, n_warps, routes);
#pragma unroll
    for (int j = 0; j < P; ++j) p[j] = router_div(p[j], total);
  }
  T s[P];
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int e = tid + j * n_threads;
    s[j] = 0;
    if (active && e < a.n_expert) {
      s[j] = p[j] + b[j];
      score[e] = s[j];
    }
  }
  __syncthreads();
  // Expert groups: the groups' scores, then every expert of a group not kept leaves the choice: its score becomes
  // NaN, in shared memory (ahead of nobody) and in s[j] (its own rank is not written).
  if (kGroups && a.n_group > 1) {  // block-uniform: every thread meets the two barriers
    T* gscore = smem + a.n_expert + a.k;
    const int per = a.n_expert / a.n_group;
    if (active) {
      for (int g = tid; g < a.n_group; g += n_threads) gscore[g] = router_group_score(score + g * per, per);
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int e = tid + j * n_threads;
      if (active && e < a.n_expert && !router_group_kept(gscore, a.n_group, e / per, a.topk_group)) {
        s[j] = router_excluded(T(0));
        score[e] = s[j];
      }
    }
    __syncthreads();
  }
  auto* ids = reinterpret_cast<int32_t*>(a.ids + static_cast<uint64_t>(token) * a.id_stride);
  auto* w = reinterpret_cast<float*>(a.weights + static_cast<uint64_t>(token) * a.w_stride);
  if (active) {
    // Expert o is ahead of e when its score is larger, or equal with o < e: for o < e that is score >= s, else
    // score > s (both false for a NaN on either side, as the two-part test).
    int rank[P];
#pragma unroll
    for (int j = 0; j < P; ++j) rank[j] = 0;
#pragma unroll 4
    for (int o = 0; o < a.n_expert; ++o) {
      const T so = score[o];
#pragma unroll
      for (int j = 0; j < P; ++j) rank[j] += o < tid + j * n_threads ? so >= s[j] : so > s[j];
    }
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const int e = tid + j * n_threads;
      if (e < a.n_expert && rank[j] < a.k && !(kGroups && a.n_group > 1 && s[j] != s[j])) {
        ids[rank[j]] = e;
        chosen[rank[j]] = p[j];
      }
    }
  }
  __syncthreads();
  if (!active) return;
  // Every writing thread sums the chosen in rank order itself (the same bits in each): no further barrier.
  // Gating 2: chosen[j] are logits; weight_j = exp(c_j - c_0) / (sum over the chosen, rank order), c_0 the first
  // chosen's (the reference's shift), each exp evaluated the same way wherever it is needed.
  T soft = 1;
  if (a.chosen_softmax && tid < a.k) {
    soft = 0;
    for (int j = 0; j < a.k; ++j) soft += router_exp(chosen[j] - chosen[0]);
  }
  const auto chosen_weight = [&](int j) {
    return a.chosen_softmax ? router_div(router_exp(chosen[j] - chosen[0]), soft) : chosen[j];
  };
  T norm = 1;
  if (a.normalize && tid < a.k) {
    norm = 0;
    for (int j = 0; j < a.k; ++j) norm += chosen_weight(j);
  }
  for (int j = tid; j < a.k; j += n_threads) {
    T v = chosen_weight(j);
    if (a.normalize) v = router_div(v, norm);
    w[j] = static_cast<float>(v * static_cast<T>(a.factor));
  }
}

}  // namespace strata::gpu
