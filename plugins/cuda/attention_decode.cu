// ATTENTION for a few tokens (decode): split-K ("flash decoding"). The grid is fixed by the shapes and the cache's
// capacity (a graph replays one launch for every decode step): n_split blocks per (q heads of a kv head, token).
// On the device each token's positions 0..p (lo..p in a sliding window) are cut into n_split chunks of whole kTile
// tiles (at least one tile), so the work spreads over the blocks whatever p is; blocks whose chunk starts past p
// exit at once. A block keeps,
// per q head, a running max, sum of exp and unnormalised weighted values over its tiles (an online softmax); the
// combine merges the chunks per (head, token). Regrouping the sums over positions moves the double by ~1e-16
// relative (docs/CANONICAL_ARITHMETIC.md section 6 allows it); the scores are the reference's bits.
#include <algorithm>

#include "act_quant.cuh"
#include "attention_paths.hpp"
#include "dependent_launch.cuh"
#include "dynamic_smem.hpp"
#include "ops.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu::attention {
namespace {

constexpr int kTile = 32;             // positions per chunk unit of a split
constexpr int kMaxBlockDims = 1024;   // q heads * head_dim of one block
constexpr int kPer = 4;               // q heads per thread in the weighted values (one value index each)
constexpr int kMaxBlockHeads = 32;
constexpr int64_t kBlocksPerSm = 2;  // what a split block's ~77 KB of shared memory (head_dim 128) lets run at once
constexpr int64_t kMaxSplits = 256;

struct DecodeArgs {
  Operands o;
  double* part_out;  // [n_tok][n_head][n_split][head_dim] unnormalised weighted values
  double* part_ml;   // [n_tok][n_head][n_split][2] max score, sum of exp(score - max)
  unsigned char* q8;  // nullptr, or the output rows' Q8_1 copy (n_head * head_dim / 32 blocks a token)
  int heads;         // q heads per block (dividing the group)
  int n_split;
};

// Positions per split for a token at position p: whole kTile units, at least one.
__device__ __forceinline__ int split_chunk(int p, int n_split) {
  const int tiles = (p / kTile + 1 + n_split - 1) / n_split;
  return (tiles < 1 ? 1 : tiles) * kTile;
}

// Shared memory, all doubles, in this order: the tile's scores [heads][kTile]; per head m, l, alpha; q of the
// block's heads [heads][stride] and the tile's keys [positions][stride] (permuted, stride = 32 * kT + 2: the padding
// starts neighbouring rows 16 bytes apart, so a warp's 16-byte loads of 32 rows meet no bank conflict), the tile's
// values [positions][head_dim]. Keys, values and q are staged as doubles, converted once each: the scores and the
// weighted sums then read doubles (a float-to-double conversion costs 4 double fmas' issue on sm_90).
__host__ __device__ constexpr int row_stride(int kT) { return kLanes * kT + 2; }
// The header's doubles: an even count of them so that the rows stay 16-byte aligned.
__host__ __device__ constexpr int split_header(int heads) { return (3 * heads + heads * kTile + 1) / 2 * 2; }
__host__ __device__ constexpr size_t split_bytes(int kT, int positions, int heads, int head_dim) {
  return sizeof(double) * static_cast<size_t>(split_header(heads) + heads * row_stride(kT) +
                                              positions * (row_stride(kT) + head_dim));
}
#if defined(STRATA_GPU_HIP)
constexpr size_t kSplitSmemLimit = 64 * 1024;  // a CDNA block's LDS
#else
constexpr size_t kSplitSmemLimit = 96 * 1024;
#endif
// Positions whose keys and values sit in shared memory at once: a chunk's unit, or a half or a quarter of it where
// the widest rows (32 * kT) of one head would not fit otherwise.
__host__ __device__ constexpr int tile_positions(int kT) {
  return split_bytes(kT, kTile, 1, kLanes * kT) <= kSplitSmemLimit       ? kTile
         : split_bytes(kT, kTile / 2, 1, kLanes * kT) <= kSplitSmemLimit ? kTile / 2
                                                                         : kTile / 4;
}
size_t split_smem(int kT, int heads, int head_dim) { return split_bytes(kT, tile_positions(kT), heads, head_dim); }

// Terms per leaf of the 32-lane tree: head_dim padded to 32 * kT.
constexpr int terms_per_leaf(int head_dim) { return head_dim <= 2 * kLanes ? 2 : head_dim <= 4 * kLanes ? 4 : 8; }

// Heads per thread in the weighted values: a thread owns one value index d and the heads r, r + R, ... where R
// (replicas) = kThreads / head_dim thread sets cover the head_dim indices; the value read once serves them all.
__host__ __device__ inline int value_replicas(int head_dim) { return kThreads / head_dim; }

// The split kernel's launch bounds. ptxas's own register choice spills on sm_120 (80 registers, 52 bytes for kT 8),
// and asking it for kBlocksPerSm blocks at once (a 128-register cap) gives spill-free code on sm_86, 89 and 120; on
// sm_90 that cap spills instead, and its own choice (about 100) does not. Either way the code is the same
// arithmetic: only the register allocation moves.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#define STRATA_SPLIT_BOUNDS __launch_bounds__(kThreads, kBlocksPerSm)
#else
#define STRATA_SPLIT_BOUNDS __launch_bounds__(kThreads)
#endif

template <Cache kCache, int kT>
__global__ void STRATA_SPLIT_BOUNDS attention_split_f64ref(DecodeArgs a) {
  extern __shared__ double smem[];
  constexpr int kS = row_stride(kT), kN = tile_positions(kT);
  static_assert(kLanes * kT <= kThreads, "a thread owns one value index");
  static_assert(split_bytes(kT, kN, 1, kLanes * kT) <= kSplitSmemLimit, "a tile of one head fits");
  const Operands& o = a.o;
  const int G = a.heads, D = o.head_dim;
  double* sc = smem;                       // [G][kTile], 16-byte aligned rows: weights are read in pairs
  double* m_run = sc + G * kTile;
  double* l_run = m_run + G;
  double* alpha = l_run + G;
  double* qs = smem + split_header(G);     // [G][kS]
  double* ks = qs + G * kS;                // [kN][kS]
  double* vs = ks + kN * kS;               // [kN][D]
  const int t = static_cast<int>(blockIdx.z), split = static_cast<int>(blockIdx.x);
  const int h0 = static_cast<int>(blockIdx.y) * G;  // the block's first q head
  wait_for_inputs();  // before any read of the step's data or any return (dependent_launch.cuh)
  start_dependents();
  const int32_t p = o.pos[t];
  if (p < 0 || p >= o.n_ctx) return;  // the combine marks such a token
  // The token's keys lo..p (a sliding window's, or all) cut into the splits' chunks.
  const int lo = window_first_key(p, o.window);
  const int chunk = split_chunk(p - lo, a.n_split);
  const int begin = lo + split * chunk;
  if (begin > p) return;
  const int end = min(begin + chunk, p + 1);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % kWarp, warp = tid / kWarp;
  constexpr int n_warps = kThreads / kWarp;
  const int64_t koff = static_cast<int64_t>(h0 / o.group) * D;  // this kv head's values within a cache column

  zero_padding<kT>(qs, G, kS, D);
  zero_padding<kT>(ks, kN, kS, D);
  for (int i = tid; i < G * D; i += kThreads) {
    const int g = i / D, d = i % D;
    qs[g * kS + permuted_index<kT>(d)] = static_cast<double>(q_row(o, t, h0 + g)[d]);
  }
  for (int g = tid; g < G; g += kThreads) {
    l_run[g] = 0.0;
    m_run[g] = -INFINITY;
  }
  // The outputs this thread owns: value index v_idx of heads o_head0 + R * k (those below G).
  const int R = value_replicas(D);
  const int v_idx = tid % D, o_head0 = tid < R * D ? tid / D : G;
  double acc[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) acc[k] = 0.0;
  // Scores: a thread per (pair of heads, position); a pair shares each key load. An odd group's last pair
  // evaluates its one head twice (a q stride of 0) and stores it once.
  const int pairs = (G + 1) / 2;

  for (int tile = begin; tile < end; tile += kN) {
    const int n = min(kN, end - tile);
    __syncthreads();  // q is in place; the previous tile's keys, values and weights are used up
    load_columns<kCache, kT>(o.k, o.k_stride, koff, D, tile, n, o.vec4 != 0, ks, kS);
    load_columns<kCache, 0>(o.v, o.v_stride, koff, D, tile, n, o.vec4 != 0, vs, D);
    __syncthreads();
    for (int i = tid; i < pairs * kN; i += kThreads) {
      const int g = 2 * (i / kN), jj = i % kN;
      if (jj < n) {
        const bool two = g + 1 < G;
        double s[2][1];
        dot32_tile<kT, 2, 1>(qs + g * kS, two ? kS : 0, ks + jj * kS, 0, s);
        sc[g * kTile + jj] = o.scale * s[0][0];
        if (two) sc[(g + 1) * kTile + jj] = o.scale * s[1][0];
      }
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
    // Weighted values: each thread its value index for its heads, over the tile's positions.
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int g = o_head0 + R * k;
      if (g < G) acc[k] = acc[k] * alpha[g];
    }
    // Positions in pairs: one 16-byte load of a head's two weights.
    int jj = 0;
    for (; jj + 1 < n; jj += 2) {
      const double v0 = vs[jj * D + v_idx], v1 = vs[(jj + 1) * D + v_idx];
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int g = o_head0 + R * k;
        if (g < G) {
          const double2 w = *reinterpret_cast<const double2*>(sc + g * kTile + jj);
          acc[k] = (acc[k] + w.x * v0) + w.y * v1;
        }
      }
    }
    if (jj < n) {
      const double v = vs[jj * D + v_idx];
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int g = o_head0 + R * k;
        if (g < G) acc[k] = acc[k] + sc[g * kTile + jj] * v;
      }
    }
  }

  const int64_t row = (static_cast<int64_t>(t) * o.n_head + h0) * a.n_split + split;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int g = o_head0 + R * k;
    if (g < G) a.part_out[(row + static_cast<int64_t>(g) * a.n_split) * D + v_idx] = acc[k];
  }
  for (int g = tid; g < G; g += kThreads) {
    double* ml = a.part_ml + 2 * (row + static_cast<int64_t>(g) * a.n_split);
    ml[0] = m_run[g];
    ml[1] = l_run[g];
  }
}

// One block per (head, token): out = sum_c exp(m_c - M) acc_c / (sum_c exp(m_c - M) l_c [+ exp(sink - M)]), in
// double, M the largest m_c (and the sink). The sum over
// the chunks c is cut into kThreads / head_dim slices (threads otherwise idle), each a chain with many loads in
// flight, then the slices are added.
__global__ void __launch_bounds__(kThreads) attention_combine_f64ref(DecodeArgs a) {
  extern __shared__ double smem[];
  double* weight = smem;               // [n_split]
  double* sums = smem + a.n_split;     // [slices][head_dim]
  __shared__ double partial[kThreads / kWarp];
  const Operands& o = a.o;
  const int h = static_cast<int>(blockIdx.x), t = static_cast<int>(blockIdx.y), tid = static_cast<int>(threadIdx.x);
  auto* out = reinterpret_cast<float*>(o.dst + static_cast<uint64_t>(t) * o.d_stride) + static_cast<int64_t>(h) * o.head_dim;
  wait_for_inputs();  // dependent_launch.cuh
  start_dependents();
  const int32_t p = o.pos[t];
  if (p < 0 || p >= o.n_ctx) {
    // A position outside the cache (the host's checks rule it out): NaN, visibly wrong, rather than stale memory.
    for (int d = tid; d < o.head_dim; d += kThreads) {
      out[d] = __int_as_float(0x7fc00000);
      if (a.q8 != nullptr) {
        const int64_t b = (static_cast<int64_t>(t) * o.n_head + h) * (o.head_dim / 32) + d / 32;
        group_store_q8_1(out[d], d % 32, a.q8 + b * kQ8Bytes);
      }
    }
    return;
  }
  const int lo = window_first_key(p, o.window);
  const int used = (p - lo) / split_chunk(p - lo, a.n_split) + 1;
  const int64_t row = (static_cast<int64_t>(t) * o.n_head + h) * a.n_split;
  // The sink (a logit without a value row) is one more record after the chunks', (m, l) = (sink, 1) with no values:
  // it joins the maximum (as the reference's std::max, NaN aside) and the denominator through the same loads and exp
  // as the chunks' (a second exp, or selects of doubles, spilled on sm_120).
  __shared__ double sink_ml[2];
  const int records = used + (o.sinks != nullptr ? 1 : 0);
  if (o.sinks != nullptr && tid == 0) sink_ml[0] = static_cast<double>(o.sinks[h]), sink_ml[1] = 1.0;
  __syncthreads();
  const auto record = [&](int c) { return c < used ? a.part_ml + 2 * (row + c) : sink_ml; };
  double m = -INFINITY;
  for (int c = tid; c < records; c += kThreads) m = fmax(m, record(c)[0]);
  m = block_max(m, partial);
  double total = 0.0;
  for (int c = tid; c < records; c += kThreads) {
    const double* ml = record(c);
    const double w = exp(ml[0] - m);
    if (c < used) weight[c] = w;
    total = total + w * ml[1];
  }
  total = block_sum(total, partial);  // its barriers also publish weight[]
  const int D = o.head_dim, slices = value_replicas(D);
  if (tid < slices * D) {
    const int d = tid % D, slice = tid / D;
    const double* part = a.part_out + row * D + d;
    double acc = 0.0;
#pragma unroll 8
    for (int c = slice; c < used; c += slices) acc = acc + weight[c] * part[static_cast<int64_t>(c) * D];
    sums[slice * D + d] = acc;
  }
  __syncthreads();
  // With the Q8_1 copy, head_dim is a multiple of 32: whole 32-lane groups hold each block's values in order.
  const int64_t row_blocks = static_cast<int64_t>(o.n_head) * D / 32;
  for (int d = tid; d < D; d += kThreads) {
    double acc = sums[d];
    for (int slice = 1; slice < slices; ++slice) acc = acc + sums[slice * D + d];
    const float v = static_cast<float>(acc / total);
    out[d] = v;
    if (a.q8 != nullptr) {
      const int64_t b = static_cast<int64_t>(t) * row_blocks + (static_cast<int64_t>(h) * D + d) / 32;
      group_store_q8_1(v, d % 32, a.q8 + b * kQ8Bytes);
    }
  }
}

// The most q heads of a kv head's group one block holds (a divisor of the group): each thread's value index
// serves at most kPer of them, and the shared rows fit the kernel's limit.
int heads_per_block(int group, int head_dim) {
  const int kT = terms_per_leaf(head_dim);
  const int replicas = value_replicas(head_dim);
  int best = 1;
  for (int h = 1; h <= group; ++h) {
    if (group % h == 0 && h * head_dim <= kMaxBlockDims && h <= kMaxBlockHeads && (h + replicas - 1) / replicas <= kPer &&
        split_smem(kT, h, head_dim) <= kSplitSmemLimit) {
      best = h;
    }
  }
  return best;
}

// Blocks may need more than the default 48 KB of shared memory (head_dim 256 tiles): raise the kernel's limit
// on this device before its first launch there (a function attribute, not a stream operation).
template <Cache kCache, int kT>
void launch_split(const DecodeArgs& a, dim3 grid, const Context& ctx) {
  auto* const kernel = attention_split_f64ref<kCache, kT>;
  allow_dynamic_smem<attention_split_f64ref<kCache, kT>>(ctx, kSplitSmemLimit);
  launch_dependent(ctx, kernel, grid, kThreads, split_smem(kT, a.heads, a.o.head_dim), a);
}

template <Cache kCache>
void launch_split_for(const DecodeArgs& a, dim3 grid, const Context& ctx) {
  switch (terms_per_leaf(a.o.head_dim)) {
    case 2: launch_split<kCache, 2>(a, grid, ctx); break;
    case 4: launch_split<kCache, 4>(a, grid, ctx); break;
    default: launch_split<kCache, 8>(a, grid, ctx); break;
  }
}

}  // namespace

bool decode_quantizes(const Operands& o) { return o.head_dim % 32 == 0; }

void run_decode(Context& ctx, const Operands& o, Cache cache, unsigned char* q8) {
  const int heads = heads_per_block(o.group, o.head_dim);
  const int64_t head_blocks = o.n_head / heads;
  // Enough splits to spread one token's work over the GPU; no more than the capacity has tiles.
  const int64_t cap_tiles = (o.n_ctx + kTile - 1) / kTile;
  // One wave: at short contexts most blocks have no positions, and a second wave of them costs its scheduling.
  const int64_t target = kBlocksPerSm * ctx.props().multiProcessorCount;
  const int64_t want = (target + head_blocks * o.n_tok - 1) / (head_blocks * o.n_tok);
  const int64_t n_split = std::max<int64_t>(1, std::min({want, cap_tiles, kMaxSplits}));

  const auto partials = static_cast<uint64_t>(o.n_tok) * static_cast<uint64_t>(o.n_head) * static_cast<uint64_t>(n_split);
  const uint64_t out_bytes = (partials * static_cast<uint64_t>(o.head_dim) * sizeof(double) + 255) / 256 * 256;
  auto* scratch = static_cast<char*>(ctx.scratch(ScratchSlot::AttnPartial, out_bytes + partials * 2 * sizeof(double)));
  const DecodeArgs a{o, reinterpret_cast<double*>(scratch), reinterpret_cast<double*>(scratch + out_bytes), q8,
                     heads, static_cast<int>(n_split)};
  const dim3 grid(static_cast<unsigned>(n_split), static_cast<unsigned>(head_blocks), static_cast<unsigned>(o.n_tok));
  switch (cache) {
    case Cache::F16: launch_split_for<Cache::F16>(a, grid, ctx); break;
    case Cache::Q8_0: launch_split_for<Cache::Q8_0>(a, grid, ctx); break;
    case Cache::F32: launch_split_for<Cache::F32>(a, grid, ctx); break;
  }
  check_launch("ATTENTION (decode splits)");
  const dim3 combine_grid(static_cast<unsigned>(o.n_head), static_cast<unsigned>(o.n_tok));
  const size_t combine_smem = static_cast<size_t>(n_split + kThreads) * sizeof(double);  // slices * head_dim <= kThreads
  launch_dependent(ctx, attention_combine_f64ref, combine_grid, kThreads, combine_smem, a);
  check_launch("ATTENTION (combine)");
}

}  // namespace strata::gpu::attention
