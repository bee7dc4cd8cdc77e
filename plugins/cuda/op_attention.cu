// ATTENTION: causal grouped-query attention of q (src0 [head_dim, n_head, n_tok]) over the k and v caches (src1,
// src2: f16, q8_0 or f32 [head_dim * n_kv_head, n_ctx]) up to each token's position (src3, read on the device).
// In double, rounded to float once (docs/CANONICAL_ARITHMETIC.md section 6): s_j = scale * (q . k_j) in the
// 32-lane order (the reference's bits), e_j = exp(s_j - max s), out = (sum_j e_j v_j) / (sum_j e_j).
// Split-K ("flash decoding"): the cache is cut into chunks of whole tiles, one block per (chunk, q heads sharing a
// kv head, token) keeps a running max, sum of exp and unnormalised weighted values of those heads (an online
// softmax over tiles); a combine kernel merges the chunks per (head, token). The running max makes each weight
// exp(s_j - m_c) * exp(m_c - M) instead of exp(s_j - M), and the sums group the positions by tile and chunk: both
// move the double by about 1e-16 relative, which changes the float only next to a rounding boundary. The grid
// comes from the cache's capacity (graphs replay one launch for every decode step): blocks past a token's
// position exit at once.
#include <string>

#include "kv_convert.cuh"
#include "ops.hpp"
#include "strata/format/canonical_double.hpp"
#include "strata/format/tensor_checks.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kThreads = 256;
constexpr int kTile = 32;  // positions whose keys and scores sit in shared memory at once
constexpr int kMaxHeadDim = 256;
constexpr int kMaxBlockDims = 1024;  // heads * head_dim of one block: the outputs held in registers
constexpr int kMaxBlockHeads = 32;           // bounds the tile of scores in shared memory (heads * kTile doubles)
constexpr int64_t kMaxChunks = 512;
constexpr int64_t kMaxPartials = 4096;  // tokens * chunks: bounds the scratch at prefill
constexpr int kQ8Bytes = 34;

enum class Cache { F32, F16, Q8_0 };

template <Cache kCache>
__device__ __forceinline__ float cache_value(const char* col, int64_t i) {
  if constexpr (kCache == Cache::F32) {
    return reinterpret_cast<const float*>(col)[i];
  } else if constexpr (kCache == Cache::F16) {
    return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(col)[i]);
  } else {
    const char* block = col + (i / 32) * kQ8Bytes;
    const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
    return static_cast<float>(static_cast<int8_t>(block[2 + i % 32])) * d;
  }
}

struct AttnArgs {
  const char* q;
  uint64_t q_head, q_tok;
  const char* k;
  const char* v;
  uint64_t k_stride, v_stride;
  const int32_t* pos;
  double* part_out;  // [n_tok][n_head][n_chunks][head_dim] unnormalised weighted values
  double* part_ml;   // [n_tok][n_head][n_chunks][2] max score, sum of exp(score - max)
  char* dst;
  uint64_t d_stride;
  int head_dim, n_head, group, heads, n_ctx, n_chunks, chunk;  // heads: q heads per block, dividing group
  double scale;
};

// Shared memory of attention_chunks, in this order: per head m, l, alpha (double); the tile's scores [G][kTile]
// (double); q of the block's heads [G][D], the tile's keys [kTile][D + 1] (float; the padding puts the rows
// that neighbouring threads read in different banks) and the tile's values [kTile][D] (float, converted once).
size_t chunk_smem(int heads, int head_dim) {
  const auto h = static_cast<size_t>(heads), d = static_cast<size_t>(head_dim);
  return sizeof(double) * (3 * h + h * kTile) + sizeof(float) * (h * d + kTile * (d + 1) + kTile * d);
}

// The most q heads of a kv head's group one block can hold (a divisor of the group): heads * head_dim outputs
// fit the threads' registers.
int64_t heads_per_block(int64_t group, int64_t head_dim) {
  int64_t best = 1;
  for (int64_t h = 1; h <= group; ++h) {
    if (group % h == 0 && h * head_dim <= kMaxBlockDims && h <= kMaxBlockHeads) best = h;
  }
  return best;
}

// kPer: outputs (head, dim) each thread accumulates, heads * head_dim <= kPer * kThreads.
template <Cache kCache, int kPer>
__global__ void __launch_bounds__(kThreads, 1) attention_chunks(AttnArgs a) {
  extern __shared__ double smem[];
  const int G = a.heads, D = a.head_dim;
  double* m_run = smem;
  double* l_run = m_run + G;
  double* alpha = l_run + G;
  double* sc = alpha + G;                             // [G][kTile]
  auto* qs = reinterpret_cast<float*>(sc + G * kTile);  // [G][D]
  float* ks = qs + G * D;                             // [kTile][D + 1]
  float* vs = ks + kTile * (D + 1);                   // [kTile][D]
  const int t = static_cast<int>(blockIdx.z), c = static_cast<int>(blockIdx.x);
  const int h0 = static_cast<int>(blockIdx.y) * G;  // the block's first q head
  const int kvh = h0 / a.group;
  const int32_t p = a.pos[t];
  if (p < 0 || p >= a.n_ctx) return;  // the combine marks such a token
  const int begin = c * a.chunk;
  if (begin > p) return;
  const int end = min(begin + a.chunk, p + 1);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarp, warp = tid / kWarp;
  constexpr int n_warps = kThreads / kWarp;
  const int64_t koff = static_cast<int64_t>(kvh) * D;  // this kv head's values within a cache column
  const int krow = D + 1;

  for (int i = tid; i < G * D; i += kThreads) {
    const int g = i / D, d = i % D;
    const auto* qrow = reinterpret_cast<const float*>(a.q + static_cast<uint64_t>(t) * a.q_tok +
                                                      static_cast<uint64_t>(h0 + g) * a.q_head);
    qs[i] = qrow[d];
  }
  for (int g = tid; g < G; g += kThreads) {
    l_run[g] = 0.0;
    m_run[g] = -INFINITY;
  }
  // The outputs this thread owns: head and value index of each.
  double acc[kPer];
  int o_head[kPer], v_idx[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int o = tid + k * kThreads;
    acc[k] = 0.0;
    o_head[k] = o < G * D ? o / D : -1;
    v_idx[k] = o < G * D ? o % D : 0;
  }

  for (int tile = begin; tile < end; tile += kTile) {
    const int n = min(kTile, end - tile);
    __syncthreads();  // q is in place; the previous tile's keys and scores are used up
    for (int i = tid; i < n * D; i += kThreads) {
      const int jj = i / D, d = i % D;
      ks[jj * krow + d] = cache_value<kCache>(a.k + static_cast<uint64_t>(tile + jj) * a.k_stride, koff + d);
      vs[i] = cache_value<kCache>(a.v + static_cast<uint64_t>(tile + jj) * a.v_stride, koff + d);
    }
    __syncthreads();
    // Scores: a thread per (head, position), the 32-lane order evaluated serially (dot32_serial_d).
    for (int i = tid; i < G * kTile; i += kThreads) {
      const int g = i / kTile, jj = i % kTile;
      if (jj < n) sc[i] = a.scale * format::dot32_serial_d(qs + g * D, ks + jj * krow, D);
    }
    __syncthreads();
    // Online softmax: a warp per q head updates its running max and sum and turns scores into weights.
    for (int g = warp; g < G; g += n_warps) {
      double mx = -INFINITY;
      for (int jj = lane; jj < n; jj += kWarp) mx = fmax(mx, sc[g * kTile + jj]);
      mx = warp_max(mx);
      const double m_old = m_run[g];
      const double m_new = fmax(m_old, mx);
      double sum = 0.0;
      for (int jj = lane; jj < n; jj += kWarp) {
        const double e = exp(sc[g * kTile + jj] - m_new);
        sc[g * kTile + jj] = e;
        sum = sum + e;
      }
      sum = warp_sum(sum);
      if (lane == 0) {
        const double al = m_old == -INFINITY ? 0.0 : exp(m_old - m_new);
        alpha[g] = al;
        l_run[g] = l_run[g] * al + sum;
        m_run[g] = m_new;
      }
    }
    __syncthreads();
    // Weighted values: each thread its (head, dim) outputs, over the tile's positions.
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      if (o_head[k] >= 0) acc[k] = acc[k] * alpha[o_head[k]];
    }
    for (int jj = 0; jj < n; ++jj) {
      const float* vrow = vs + jj * D;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        if (o_head[k] >= 0) {
          const double w = sc[o_head[k] * kTile + jj];
          acc[k] = acc[k] + w * static_cast<double>(vrow[v_idx[k]]);
        }
      }
    }
  }

  const int64_t chunk_row = (static_cast<int64_t>(t) * a.n_head + h0) * a.n_chunks + c;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    if (o_head[k] < 0) continue;
    a.part_out[(chunk_row + static_cast<int64_t>(o_head[k]) * a.n_chunks) * D + v_idx[k]] = acc[k];
  }
  for (int g = tid; g < G; g += kThreads) {
    double* ml = a.part_ml + 2 * (chunk_row + static_cast<int64_t>(g) * a.n_chunks);
    ml[0] = m_run[g];
    ml[1] = l_run[g];
  }
}

// One block per (head, token): out = sum_c exp(m_c - M) acc_c / sum_c exp(m_c - M) l_c, in double.
__global__ void __launch_bounds__(kThreads) attention_combine(AttnArgs a) {
  extern __shared__ double weight[];  // [n_chunks]
  __shared__ double partial[kThreads / 32];
  const int h = static_cast<int>(blockIdx.x), t = static_cast<int>(blockIdx.y), tid = static_cast<int>(threadIdx.x);
  auto* out =
      reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(t) * a.d_stride) + static_cast<int64_t>(h) * a.head_dim;
  const int32_t p = a.pos[t];
  if (p < 0 || p >= a.n_ctx) {
    // A position outside the cache (the host's checks rule it out): NaN, visibly wrong, rather than stale memory.
    for (int d = tid; d < a.head_dim; d += kThreads) out[d] = __int_as_float(0x7fc00000);
    return;
  }
  const int used = p / a.chunk + 1;
  const int64_t row = (static_cast<int64_t>(t) * a.n_head + h) * a.n_chunks;
  double m = -INFINITY;
  for (int c = tid; c < used; c += kThreads) m = fmax(m, a.part_ml[2 * (row + c)]);
  m = block_max(m, partial);
  double total = 0.0;
  for (int c = tid; c < used; c += kThreads) {
    const double w = exp(a.part_ml[2 * (row + c)] - m);
    weight[c] = w;
    total = total + w * a.part_ml[2 * (row + c) + 1];
  }
  total = block_sum(total, partial);  // its barriers also publish weight[]
  for (int d = tid; d < a.head_dim; d += kThreads) {
    double acc = 0.0;
    for (int c = 0; c < used; ++c) acc = acc + weight[c] * a.part_out[(row + c) * a.head_dim + d];
    out[d] = static_cast<float>(acc / total);
  }
}

// Blocks may need more than the default 48 KB of shared memory (head_dim 256 tiles): raise the kernel's limit
// before its first launch (a function attribute, not a stream operation).
template <Cache kCache, int kPer>
void launch_one(const AttnArgs& a, dim3 grid, size_t smem, cudaStream_t stream) {
  auto* const kernel = attention_chunks<kCache, kPer>;
  static const cudaError_t raised = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
  (void)raised;
  attention_chunks<kCache, kPer><<<grid, kThreads, smem, stream>>>(a);
}

template <Cache kCache>
void launch_chunks(const AttnArgs& a, int per, dim3 grid, size_t smem, cudaStream_t stream) {
  if (per <= 2) {
    launch_one<kCache, 2>(a, grid, smem, stream);
  } else if (per <= 4) {
    launch_one<kCache, 4>(a, grid, smem, stream);
  } else {
    launch_one<kCache, 8>(a, grid, smem, stream);
  }
}

}  // namespace

Check check_attention(const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  if (auto e = format::check_rows(q, "src0 (q)", GgmlType::F32)) return e;
  if (auto e = format::check_rows(pos, "src3 (positions)", GgmlType::I32)) return e;
  if (auto e = format::check_matrix(d, "dst", GgmlType::F32)) return e;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1], n_tok = q.ne[2];
  if (n_head <= 0 || n_kv_head <= 0 || n_head % n_kv_head != 0) {
    return "i[0] (n_head) " + std::to_string(n_head) + " must be a positive multiple of i[1] (n_kv_head) " +
           std::to_string(n_kv_head);
  }
  if (q.ne[1] != n_head || q.ne[3] != 1)
    return "src0 (q) must be [head_dim, n_head = " + std::to_string(n_head) + ", n_tok]";
  if (head_dim > kMaxHeadDim)
    return "head_dim " + std::to_string(head_dim) + " is above " + std::to_string(kMaxHeadDim);
  for (const strata_tensor* c : {&k, &v}) {
    const char* what = c == &k ? "src1 (k cache)" : "src2 (v cache)";
    if (!format::is_type(*c, GgmlType::F16) && !format::is_type(*c, GgmlType::Q8_0) &&
        !format::is_type(*c, GgmlType::F32)) {
      return std::string(what) + " is " + format::type_name(c->type) + " (known: f16, q8_0, f32)";
    }
    if (auto e = format::check_matrix(*c, what)) return e;
    if (c->ne[0] != head_dim * n_kv_head) {
      return std::string(what) + " columns must hold head_dim * n_kv_head = " + std::to_string(head_dim * n_kv_head) +
             " values, not " + std::to_string(c->ne[0]);
    }
    if (c->nb[1] % (format::is_type(*c, GgmlType::F32) ? 4 : 2) != 0)
      return std::string(what) + " columns are misaligned";
    if (format::is_type(*c, GgmlType::Q8_0) && head_dim % 32 != 0) {
      return std::string(what) + " is q8_0, which needs head_dim to be a multiple of 32 (it is " +
             std::to_string(head_dim) + ")";
    }
  }
  if (k.type != v.type) return std::string("src1 (k cache) and src2 (v cache) must have one type");
  if (k.ne[1] != v.ne[1]) return std::string("src1 (k cache) and src2 (v cache) must have as many columns");
  if (k.ne[1] > (int64_t{1} << 30)) return std::string("the caches have more than 2^30 columns");
  if (format::row_count(pos) != 1 || pos.ne[0] != n_tok) {
    return "src3 (positions) must hold one position per token (" + std::to_string(n_tok) + ")";
  }
  if (n_tok > 65535 || n_kv_head > 65535 || n_head > 65535) return std::string("more than 65535 tokens or heads");
  if (d.ne[0] != head_dim * n_head || d.ne[1] != n_tok) {
    return "dst must be [head_dim * n_head, n_tok] = [" + std::to_string(head_dim * n_head) + ", " +
           std::to_string(n_tok) + "]";
  }
  return std::nullopt;
}

void run_attention(Context& ctx, const strata_op& op) {
  const strata_tensor &q = op.src[0], &k = op.src[1], &v = op.src[2], &pos = op.src[3], &d = op.dst;
  const int64_t head_dim = q.ne[0], n_head = op.i[0], n_kv_head = op.i[1], n_tok = q.ne[2], n_ctx = k.ne[1];
  const int64_t group = n_head / n_kv_head, heads = heads_per_block(group, head_dim);
  // Chunks of whole tiles; at most kMaxChunks per token and kMaxPartials over all tokens.
  int64_t max_chunks = kMaxPartials / n_tok;
  max_chunks = max_chunks < 1 ? 1 : max_chunks > kMaxChunks ? kMaxChunks : max_chunks;
  int64_t chunk = (n_ctx + max_chunks - 1) / max_chunks;
  chunk = (chunk + kTile - 1) / kTile * kTile;
  if (chunk < kTile) chunk = kTile;
  const int64_t n_chunks = (n_ctx + chunk - 1) / chunk;

  const uint64_t partials = static_cast<uint64_t>(n_tok * n_head * n_chunks);
  const uint64_t out_bytes = (partials * static_cast<uint64_t>(head_dim) * sizeof(double) + 255) / 256 * 256;
  auto* scratch = static_cast<char*>(ctx.scratch(ScratchSlot::AttnPartial, out_bytes + partials * 2 * sizeof(double)));

  AttnArgs a{static_cast<const char*>(q.data),
             q.nb[1],
             q.nb[2],
             static_cast<const char*>(k.data),
             static_cast<const char*>(v.data),
             k.nb[1],
             v.nb[1],
             static_cast<const int32_t*>(pos.data),
             reinterpret_cast<double*>(scratch),
             reinterpret_cast<double*>(scratch + out_bytes),
             static_cast<char*>(d.data),
             d.nb[1],
             static_cast<int>(head_dim),
             static_cast<int>(n_head),
             static_cast<int>(group),
             static_cast<int>(heads),
             static_cast<int>(n_ctx),
             static_cast<int>(n_chunks),
             static_cast<int>(chunk),
             static_cast<double>(op.f[0])};
  const int per = static_cast<int>((heads * head_dim + kThreads - 1) / kThreads);
  const dim3 grid(static_cast<unsigned>(n_chunks), static_cast<unsigned>(n_head / heads), static_cast<unsigned>(n_tok));
  const size_t smem = chunk_smem(static_cast<int>(heads), static_cast<int>(head_dim));
  if (format::is_type(k, GgmlType::F16)) {
    launch_chunks<Cache::F16>(a, per, grid, smem, ctx.stream());
  } else if (format::is_type(k, GgmlType::Q8_0)) {
    launch_chunks<Cache::Q8_0>(a, per, grid, smem, ctx.stream());
  } else {
    launch_chunks<Cache::F32>(a, per, grid, smem, ctx.stream());
  }
  check_launch("ATTENTION (chunks)");
  const dim3 combine_grid(static_cast<unsigned>(n_head), static_cast<unsigned>(n_tok));
  attention_combine<<<combine_grid, kThreads, static_cast<size_t>(n_chunks) * sizeof(double), ctx.stream()>>>(a);
  check_launch("ATTENTION (combine)");
}

}  // namespace strata::gpu
