// The tiled kernel of tiled_product.cuh. One block: kTileRows weight rows x kTileCols columns, eight warps, warp r
// the accumulator A_r of every (row, column) (mma_tile.cuh). Per chunk of eight spans the block makes the weight and
// activation records in shared memory from global memory between two barriers, then warp r forms its span's integer
// sums with MMAs and adds the span's partials; at the end the fixed tree joins the warps' accumulators and warp 0
// writes the tile.
//
// Two other forms, the same bits, lost on the H100 and were taken out: a staged one (the next chunk's raw bytes
// copied into shared memory with cp.async while the warps computed on this one; 0.97-0.99x this form in three
// leases of 2026-12-06) and a double one (two sets of records, one barrier a chunk; 0.96-0.97x).
#include "mma_tile.cuh"
#include "ops.hpp"
#include "tiled_product.cuh"

namespace strata::gpu {
namespace {

#if !defined(STRATA_GPU_HIP)

constexpr int kStageWords = kTileWarps * (kWeightSpanWords + kActSpanWords);
constexpr int kSlotFloats = kTileRows * kTileCols;  // one warp's accumulators in the tree's exchange
constexpr uint32_t kSpareColumn = 0xffffffffu;      // col_out of a tile's columns past its last
static_assert(4 * kSlotFloats <= kStageWords, "the tree's exchange reuses the staging memory");

// start + A x B over 32 values (one 32-value sub-block) and over 16 values (a 16-value sub-block), exact int32.
__device__ inline void mma_k32(const uint32_t (&a)[4], const uint32_t (&b)[2], int start, int (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(start));
#else
  (void)a;
  (void)b;
  c[0] = c[1] = c[2] = c[3] = start;
  __trap();  // has_tiled_kernel keeps older devices off this path
#endif
}

__device__ inline void mma_k16(uint32_t a0, uint32_t a1, uint32_t b, int start, int (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(b), "r"(start));
#else
  (void)a0;
  (void)a1;
  (void)b;
  c[0] = c[1] = c[2] = c[3] = start;
  __trap();
#endif
}

// Warp r's span: every (row, column) of the tile gets A_r = A_r + p_j, the sums made floats as kForm asks
// (mma_tile.cuh's SumForm).
template <class Dec, SumForm kForm>
__device__ inline void add_span(const uint32_t* wrecs, const uint32_t* arecs, int lane,
                                float (&acc)[kTileM][kTileN][4]) {
  uint32_t b[kTileN][2];
  ColScales cs[kTileN][2];
#pragma unroll
  for (int n = 0; n < kTileN; ++n) {
    load_frag_b(arecs, 8 * n, lane, b[n]);
#pragma unroll
    for (int h = 0; h < 2; ++h) cs[n][h] = col_scales(arecs + (8 * n + frag_c_col(lane, h)) * kRecordWords);
  }
#pragma unroll
  for (int m = 0; m < kTileM; ++m) {
    uint32_t a[4];
    load_frag_a(wrecs, 16 * m, lane, a);
    RowScales rs[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) rs[h] = row_scales(wrecs + (16 * m + frag_c_row(lane, 2 * h)) * kRecordWords);
#pragma unroll
    for (int n = 0; n < kTileN; ++n) {
      int s0[4], s1[4] = {0, 0, 0, 0};
      if constexpr (Dec::kSub == 32) {
        mma_k32(a, b[n], kMmaSumStart<Dec, kForm>, s0);
      } else {
        mma_k16(a[0], a[1], b[n][0], kMmaSumStart<Dec, kForm>, s0);
        mma_k16(a[2], a[3], b[n][1], kMmaSumStart<Dec, kForm>, s1);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        acc[m][n][i] = acc[m][n][i] + tile_partial<Dec, kForm>(rs[i / 2], cs[n][i % 2], s0[i], s1[i]);
      }
    }
  }
}

// Types with 16-value sub-blocks (Q2_K, Q3_K, Q6_K, IQ2_XS, IQ2_S, IQ1_M) take two k16 MMAs a span; compiled for
// sm_86/89/120 their kernels spill a few bytes (12-24 with nvcc 13; ptxas -Werror fails the build), so they are
// built for sm_90 only and has_tiled_kernel keeps other archs on the untiled path for them.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#define STRATA_TILED_SUB16 0
#else
#define STRATA_TILED_SUB16 1
#endif

template <class Dec>
__device__ __forceinline__ void tiled_body(TiledJob p);

// How the warps' accumulators are joined and written: in parallel (two exchanges, three barriers, every warp
// finishing an eighth of the outputs), or in three steps (six barriers) after which warp 0 alone writes the tile:
// Q3_K's kernel, which the parallel form pushes 16 bytes past 128 registers on sm_90. (The down products, three
// chunks long, spent about a quarter of their time in the three steps.)
template <class Dec>
constexpr bool kParallelTail = Dec::kType != GgmlType::Q3_K;

// Two blocks per SM (128 registers): ptxas left alone takes up to 150 for some types (one block per SM). Q2_K's
// decode does not fit 128 without spills: it keeps one, and so does Q5_1's on sm_86 and sm_89 (8 bytes spilled).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890)
#define STRATA_TILED_Q5_1_WIDE 1
#else
#define STRATA_TILED_Q5_1_WIDE 0
#endif
template <class Dec>
constexpr int kTiledMinBlocks =
    Dec::kType == GgmlType::Q2_K || (STRATA_TILED_Q5_1_WIDE && Dec::kType == GgmlType::Q5_1) ? 1 : 2;

template <class Dec>
__global__ void __launch_bounds__(kTileThreads, kTiledMinBlocks<Dec>) tiled_kernel(TiledJob p) {
#if !STRATA_TILED_SUB16
  if constexpr (Dec::kSub == 16) {
    __trap();
    return;
  } else
#endif
  {
    tiled_body<Dec>(p);
  }
}

template <class Dec>
__device__ __forceinline__ void tiled_body(TiledJob p) {
  // The records (declared first: ptxas's registers for Q3_K and Q6_K depend on the layout).
  __shared__ __align__(16) uint32_t stage[kStageWords];  // records: 16-byte stores
  __shared__ uint32_t col_act[kTileCols];  // activation row of each column
  __shared__ uint32_t col_out[kTileCols];  // output row of each column, kSpareColumn past the tile's columns
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;

  // The tile's column count lives on in col_out only (kSpareColumn), so that no register holds it through the
  // loop: with it in a register the sub16 i-quants (IQ2_XS, IQ2_S, IQ1_M) spill 8 bytes on sm_90.
  const uint8_t* w = p.w;
  if (p.tiles != nullptr) {
    if (blockIdx.y >= *p.n_tiles) return;  // the whole block leaves together
    const ExpertTile tile = p.tiles[blockIdx.y];
    const strata_expert_weights& e = p.experts[tile.expert];
    w = static_cast<const uint8_t*>(p.which == 0 ? e.gate : p.which == 1 ? e.up : e.down);
    const int n_cols = static_cast<int>(tile.count);
    if (tid < kTileCols) {
      const uint32_t pair = p.pairs[tile.begin + static_cast<uint32_t>(tid < n_cols ? tid : n_cols - 1)];
      col_act[tid] = pair / static_cast<uint32_t>(p.act_div);
      col_out[tid] = tid < n_cols ? pair : kSpareColumn;
    }
  } else {
    const int c0 = static_cast<int>(blockIdx.y) * kTileCols;
    const int n_cols = p.n_cols - c0 < kTileCols ? p.n_cols - c0 : kTileCols;
    if (tid < kTileCols) {
      const auto c = static_cast<uint32_t>(c0 + (tid < n_cols ? tid : n_cols - 1));  // spare columns repeat one
      col_act[tid] = c;
      col_out[tid] = tid < n_cols ? c : kSpareColumn;
    }
  }
  const int row0 = static_cast<int>(blockIdx.x) * kTileRows;
  const uint64_t act_row_bytes = static_cast<uint64_t>(p.n_spans) * kQ8BlockBytes;
  uint32_t* wrecs = stage;                                 // [span][row][word], kWeightSpanWords a span
  uint32_t* arecs = stage + kTileWarps * kWeightSpanWords;  // [span][column][word], kActSpanWords a span
  const auto weight_row = [&](int r) {  // spare rows repeat the last
    return w + static_cast<uint64_t>(row0 + r < p.rows ? row0 + r : p.rows - 1) * p.w_stride;
  };

  float acc[kTileM][kTileN][4];
#pragma unroll
  for (int m = 0; m < kTileM; ++m) {
#pragma unroll
    for (int n = 0; n < kTileN; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.0f;
    }
  }
  __syncthreads();

  for (int base = 0; base < p.n_spans; base += kTileWarps) {
    for (int i = tid; i < kTileRows * kTileWarps; i += kTileThreads) {
      const int r = i / kTileWarps, s = i % kTileWarps;
      if (base + s < p.n_spans) {
        make_weight_record<Dec>(weight_row(r), base + s, wrecs + s * kWeightSpanWords + r * kRecordWords);
      }
    }
    for (int i = tid; i < kTileCols * kTileWarps; i += kTileThreads) {
      const int c = i / kTileWarps, s = i % kTileWarps;
      if (base + s < p.n_spans) {
        make_act_record<Dec>(p.act + col_act[c] * act_row_bytes, base + s, arecs + s * kActSpanWords + c * kRecordWords);
      }
    }
    __syncthreads();
    if (base + warp < p.n_spans) {
      add_span<Dec, SumForm::kFold>(wrecs + warp * kWeightSpanWords, arecs + warp * kActSpanWords, lane, acc);
    }
    __syncthreads();
  }

  // The fixed tree ((A0+A1)+(A2+A3))+((A4+A5)+(A6+A7)), through slots of shared memory (element e of lane l of a
  // warp's sums at e * 32 + l), then the outputs written (times the pair's weight for MoE tiles).
  auto* exchange = reinterpret_cast<float*>(stage);
  // Accumulator element e = (m * kTileN + n) * 4 + i, the slots' order (constant indices once the loops unroll).
  const auto sum = [&](int e) -> float& { return acc[e / (4 * kTileN)][e / 4 % kTileN][e % 4]; };
  constexpr int kElems = kTileM * kTileN * 4;  // accumulator elements a lane
  if constexpr (kParallelTail<Dec>) {
    const auto put = [&](int s) {  // this warp's sums into slot s
#pragma unroll
      for (int e = 0; e < kElems; ++e) exchange[s * kSlotFloats + e * 32 + lane] = sum(e);
    };
    const auto write = [&](int m, int n, int i, float v) {  // element (m, n, i) of this lane's tile
      const int row = row0 + 16 * m + frag_c_row(lane, i);
      const uint32_t o = col_out[8 * n + frag_c_col(lane, i)];
      if (row < p.rows && o != kSpareColumn) {
        p.out[static_cast<int64_t>(o) * p.out_stride + row] = p.pair_weight != nullptr ? p.pair_weight[o] * v : v;
      }
    };
    // Two exchanges: each odd warp hands its sums to the even warp before it (the pairs P), the even warps put
    // P0..P3 in shared memory, and every warp finishes an eighth of the outputs, (P0+P1)+(P2+P3), and writes them.
    if (warp % 2 == 1) put(warp / 2);
    __syncthreads();
    if (warp % 2 == 0) {
#pragma unroll
      for (int e = 0; e < kElems; ++e) sum(e) = sum(e) + exchange[(warp / 2) * kSlotFloats + e * 32 + lane];
    }
    __syncthreads();
    if (warp % 2 == 0) put(warp / 2);
    __syncthreads();
    constexpr int kPerWarp = kElems / kTileWarps;
    static_assert(kElems % kTileWarps == 0, "every warp finishes as many elements");
#pragma unroll
    for (int j = 0; j < kPerWarp; ++j) {
      const int e = warp * kPerWarp + j;
      const float* at = exchange + e * 32 + lane;
      write(e / (4 * kTileN), e / 4 % kTileN, e % 4,
            (at[0] + at[kSlotFloats]) + (at[2 * kSlotFloats] + at[3 * kSlotFloats]));
    }
  } else {
    // Three steps, warp w & ~(2d-1) taking warp w's sums at step d, then warp 0 writes the whole tile (its loops
    // written out: with the put above shared, ptxas spills Q3_K's kernel).
    for (int d = 1; d < kTileWarps; d *= 2) {
      float* slot = exchange + (warp / (2 * d)) * kSlotFloats;
      if (warp % (2 * d) == d) {
#pragma unroll
        for (int e = 0; e < kElems; ++e) slot[e * 32 + lane] = sum(e);
      }
      __syncthreads();
      if (warp % (2 * d) == 0) {
#pragma unroll
        for (int e = 0; e < kElems; ++e) sum(e) = sum(e) + slot[e * 32 + lane];
      }
      __syncthreads();
    }
    if (warp != 0) return;
#pragma unroll
    for (int m = 0; m < kTileM; ++m) {
#pragma unroll
      for (int n = 0; n < kTileN; ++n) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int row = row0 + 16 * m + frag_c_row(lane, i);
          const uint32_t o = col_out[8 * n + frag_c_col(lane, i)];
          if (row < p.rows && o != kSpareColumn) {
            const float v = p.pair_weight != nullptr ? p.pair_weight[o] * acc[m][n][i] : acc[m][n][i];
            p.out[static_cast<int64_t>(o) * p.out_stride + row] = v;
          }
        }
      }
    }
  }
}

#endif  // !STRATA_GPU_HIP

}  // namespace

bool has_tiled_kernel(uint32_t type, const Context& ctx) {
#if defined(STRATA_GPU_HIP)
  (void)type;
  (void)ctx;
  return false;
#else
  bool sub16 = false;
  const bool tiled = with_tiled_decoder(type, [&](auto dec) { sub16 = decltype(dec)::kSub == 16; });
  return ctx.props().major >= 8 && tiled && (!sub16 || (ctx.props().major == 9 && ctx.props().minor == 0));
#endif
}

void launch_tiled(const TiledJob& job, uint32_t type, unsigned col_tiles, cudaStream_t stream) {
#if defined(STRATA_GPU_HIP)
  (void)job;
  (void)type;
  (void)col_tiles;
  (void)stream;
#else
  if (col_tiles == 0 || job.rows == 0) return;
  with_tiled_decoder(type, [&](auto dec) {
    using Dec = decltype(dec);
    const dim3 grid(static_cast<unsigned>((job.rows + kTileRows - 1) / kTileRows), col_tiles);
    tiled_kernel<Dec><<<grid, kTileThreads, 0, stream>>>(job);
    check_launch("tiled matrix product");
  });
#endif
}

}  // namespace strata::gpu
