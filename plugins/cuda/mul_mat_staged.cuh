// MUL_MAT with float weights and few tokens (the MoE router: [2048 x 128] F32), staged through shared memory;
// shared by op_mul_mat.cu and the fused MUL_MAT + ROUTER (fuse_router.cu), so both write the same logits.
//
// The fma chains of section 4 are 256 steps long and the weights are read once, so the time is one memory round
// trip plus the chain. A block of kStageThreads stages `rpb` weight rows (as floats) and the token rows in shared
// memory with all of every thread's loads in flight at once (one round trip: rpb = 1 and n_in = 2048 is four
// 16-byte loads a thread), then its first warp runs the chains out of shared memory: lane 8q + r holds
// accumulator r of row q (lanes past the block's rows repeat its last row and write nothing). One row a block
// spreads a small matrix over many SMs. Same operations in the same order as group8_dot_f.
#pragma once

#include <cstdint>
#include <type_traits>

#include "matvec.cuh"
#include "strata/plugin_api.h"

namespace strata::gpu {

constexpr int kStageRows = kWarp / kAccumulators;  // rows a block when there are many rows
constexpr int kStageThreads = 256;
constexpr int kStageLoads = 4;  // loads a thread issues before storing any
constexpr uint64_t kStageSharedBytes = 48 * 1024;
constexpr int kOneRowBlocksUpTo = 512;  // one row a block up to here (past it, fewer re-reads of the token rows)
constexpr int64_t kStageMaxTokens = 4;   // tokens one launch stages (four 2048-float rows and a weight row: 41 KB)
constexpr int64_t kStageMaxWindow = 8;   // windows of up to this many tokens take launches of up to 4 tokens each

// Row pitch (floats) of the staged weights: rows start 8 banks apart, so the warp's row groups hit distinct banks.
__host__ __device__ inline int64_t stage_pitch(int64_t n_in) { return n_in + (40 - n_in % 32) % 32; }

// How a MUL_MAT with float weights [n_in, rows] over n_tok tokens runs staged, if it does: in launches of up to
// kStageMaxTokens tokens each (a verify window of 5 to 8 tokens takes two; the per-thread fallback for them ran a
// 2048 x 128 router product on 4 blocks, 70 us where the staged launches take a few: the 5-token window's
// anomaly of issue 30). Each token's chains are the same in any launch, so the bits do not depend on the split.
struct StagedPlan {
  bool staged = false;  // false: too many tokens, or rows too long for the shared memory
  int rows_per_block = 1;
  uint64_t shared_bytes = 0;
  bool vec4 = false;  // float4 staging: F32 weight and token rows all 16-byte aligned
  unsigned blocks = 0;
};

inline StagedPlan staged_plan(const strata_tensor& w, const strata_tensor& x) {
  StagedPlan p;
  const int64_t n_in = w.ne[0], rows = w.ne[1], n_tok = x.ne[1];
  p.rows_per_block = rows <= kOneRowBlocksUpTo ? 1 : kStageRows;
  const int64_t per_launch = n_tok < kStageMaxTokens ? n_tok : kStageMaxTokens;
  p.shared_bytes = static_cast<uint64_t>(p.rows_per_block * stage_pitch(n_in) + per_launch * n_in) * sizeof(float);
  p.staged = n_tok <= kStageMaxWindow && p.shared_bytes <= kStageSharedBytes;
  p.vec4 = n_in % 4 == 0 && (reinterpret_cast<uintptr_t>(w.data) | w.nb[1]) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && (n_tok == 1 || x.nb[1] % 16 == 0);
  p.blocks = static_cast<unsigned>((rows + p.rows_per_block - 1) / p.rows_per_block);
  return p;
}

// Copies the block's weight rows and the token rows into shared memory; `Unit` values at a time (float4 for
// aligned F32, else one value). Items [0, rpb * units) are weight units, the rest token units.
template <FloatWeight W, bool kVec4>
__device__ inline void stage_rows(const uint8_t* w, uint64_t w_stride, int rows, int row0, int rpb, int n_in,
                                  const float* x, int64_t x_stride, int n_tok, float* sw, int pitch, float* sx) {
  using Unit = typename std::conditional<kVec4, float4, float>::type;
  constexpr int kWidth = kVec4 ? 4 : 1;
  const int units = n_in / kWidth;
  const int w_items = rpb * units, items = w_items + n_tok * units;
  const int tid = static_cast<int>(threadIdx.x);
  for (int base = tid; base < items; base += kStageThreads * kStageLoads) {
    Unit v[kStageLoads];
    float* to[kStageLoads];
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int e = base + u * kStageThreads;
      to[u] = nullptr;
      if (e < w_items) {
        const int q = e / units, c = e % units;
        const int row = row0 + q < rows ? row0 + q : rows - 1;
        const uint8_t* src = w + static_cast<uint64_t>(row) * w_stride;
        if constexpr (kVec4) {
          v[u] = reinterpret_cast<const float4*>(src)[c];
        } else {
          v[u] = load_weight<W>(src, c);
        }
        to[u] = sw + q * pitch + c * kWidth;
      } else if (e < items) {
        const int t = (e - w_items) / units, c = (e - w_items) % units;
        v[u] = reinterpret_cast<const Unit*>(x + static_cast<int64_t>(t) * x_stride)[c];
        to[u] = sx + t * n_in + c * kWidth;
      }
    }
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      if (to[u] != nullptr) *reinterpret_cast<Unit*>(to[u]) = v[u];
    }
  }
}

// Block blockIdx.x's rows of dst (rows [blockIdx.x * rpb, + rpb)) for n_tok <= NT tokens, `staged` being the
// block's dynamic shared memory (StagedPlan::shared_bytes). Every thread of the block calls it; the first warp
// writes dst. Returns without a barrier after the dots: the caller syncs before reusing `staged`.
template <FloatWeight W, int NT>
__device__ inline void staged_dot_rows(const uint8_t* w, uint64_t w_stride, int rows, int rpb, int n_in, bool vec4,
                                       const float* x, int64_t x_stride, int n_tok, float* dst, int64_t dst_stride,
                                       float* staged) {
  const int pitch = static_cast<int>(stage_pitch(n_in));
  float* sw = staged;                // [rpb][pitch]
  float* sx = staged + rpb * pitch;  // [n_tok][n_in]
  const int row0 = static_cast<int>(blockIdx.x) * rpb;
  bool done = false;
  if constexpr (W == FloatWeight::F32) {
    if (vec4) {
      stage_rows<W, true>(w, w_stride, rows, row0, rpb, n_in, x, x_stride, n_tok, sw, pitch, sx);
      done = true;
    }
  }
  if (!done) stage_rows<W, false>(w, w_stride, rows, row0, rpb, n_in, x, x_stride, n_tok, sw, pitch, sx);
  __syncthreads();
  const int tid = static_cast<int>(threadIdx.x);
  if (tid >= kWarp) return;
  const int group = tid / kAccumulators, r = tid % kAccumulators;
  const int q = group < rpb ? group : rpb - 1;
  const float* wr = sw + q * pitch;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
#pragma unroll 16
  for (int i = r; i < n_in; i += kAccumulators) {
    const float wv = wr[i];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n_tok) acc[t] = fma_c(wv, sx[t * n_in + i], acc[t]);
    }
  }
  const int row = row0 + q;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const float v = tree8(acc[t]);
    if (t < n_tok && r == 0 && group < rpb && row < rows) dst[static_cast<int64_t>(t) * dst_stride + row] = v;
  }
}

}  // namespace strata::gpu
