// Canonical quantized dots (docs/CANONICAL_ARITHMETIC.md section 2) computed by a whole block, for one token:
// the partials of every (dot, span) item first, each thread taking items tid, tid + THREADS, ... with UNROLL
// items' loads in flight at once, into shared memory; then eight threads per dot run the eight accumulator
// chains (A_r = +0.0f, then + p_r, + p_{r+8}, ... in ascending span order) out of shared memory and the fixed tree
// ((A0+A1)+(A2+A3))+((A4+A5)+(A6+A7)) by xor-shuffles. Same partials, same additions in the same order as
// warp_dot_q: only which thread computes a partial changes, and a partial's bits do not depend on that. Unlike a
// warp per row, a row's spans are all loaded at once (no round trip per 32 spans) and small matrices still spread
// over every multiprocessor. The MoE kernels stage their Q8_1 rows in shared memory once per block; the one-token
// MUL_MAT reads its row in place (kActAhead).
#pragma once

#include <cstdint>

#include "matvec.cuh"

namespace strata::gpu {

// Accumulator r's chain over the partials p[0..n): +0.0f, then p[r], p[r + 8], ... in that order.
__host__ __device__ inline float accumulator_chain(const float* p, int n, int r) {
  float a = 0.0f;
  for (int j = r; j < n; j += kAccumulators) a = a + p[j];
  return a;
}

// Floats between two dots' partials in shared memory: 8 (mod 32), so the four 8-thread groups of a warp read
// distinct banks.
__host__ __device__ inline int partial_pitch(int n_spans) { return n_spans + (40 - n_spans % 32) % 32; }

// Bytes of n_rows Q8_1 rows of n_spans blocks, rounded up to 16 (where the partials start).
__host__ __device__ inline int staged_act_bytes(int n_spans, int n_rows) {
  return (n_spans * kQ8BlockBytes * n_rows + 15) / 16 * 16;
}

// Copies `bytes` (a multiple of 4) from global memory at src (4-byte aligned) to shared memory at dst (16-byte
// aligned) with every thread of the block; 16-byte loads where src and bytes allow.
template <int THREADS>
__device__ inline void stage_bytes(unsigned char* dst, const unsigned char* src, int bytes) {
  const int tid = static_cast<int>(threadIdx.x);
  if (((reinterpret_cast<uintptr_t>(src) | static_cast<uintptr_t>(bytes)) & 15u) == 0) {
    for (int i = tid; i < bytes / 16; i += THREADS) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
  } else {
    for (int i = tid; i < bytes / 4; i += THREADS) {
      reinterpret_cast<uint32_t*>(dst)[i] = reinterpret_cast<const uint32_t*>(src)[i];
    }
  }
}

// The partials of dots 0..n_dots-1 over n_spans spans into part[d * pitch + j]: row_of(d) is dot d's weight row,
// act_of(d) its Q8_1 row (shared memory; or global memory with kActAhead, whose loads then issue beside the
// weights' instead of after them).
template <class Dec, int THREADS, int UNROLL, class RowOf, class ActOf, bool kActAhead = false>
__device__ inline void block_partials(int n_dots, int n_spans, RowOf row_of, ActOf act_of, float* part, int pitch) {
  const int n_items = n_dots * n_spans;
  for (int base = static_cast<int>(threadIdx.x); base < n_items; base += THREADS * UNROLL) {
    // Items past the end repeat the last one (not stored): no branches between the loads, so all of them issue
    // before the first use.
    Span sp[UNROLL];
    uint32_t q[kActAhead ? UNROLL : 1][8];
    float da[kActAhead ? UNROLL : 1];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int item = min(base + u * THREADS, n_items - 1);
      decode_row_span<Dec>(row_of(item / n_spans), item % n_spans, sp[u]);
      if constexpr (kActAhead) load_q8_1(act_of(item / n_spans), item % n_spans, q[u], da[u]);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int item = min(base + u * THREADS, n_items - 1);
      const int d = item / n_spans, j = item % n_spans;
      const int k = kActAhead ? u : 0;
      if constexpr (!kActAhead) load_q8_1(act_of(d), j, q[k], da[k]);
      const float p = span_partial<Dec>(sp[u], q[k], da[k]);
      if (base + u * THREADS < n_items) part[d * pitch + j] = p;
    }
  }
}

// block_partials for a window of n_tok tokens whose Q8_1 rows lie act_stride bytes apart from act (read in place,
// like kActAhead's): each item's weight span decoded once, then its partial against every token's block into
// part[t * plane + d * pitch + j]. The partials are those a one-token pass makes for each token.
template <class Dec, int THREADS, int UNROLL, class RowOf>
__device__ inline void block_partials_window(int n_dots, int n_spans, RowOf row_of, const unsigned char* act,
                                             uint64_t act_stride, int n_tok, float* part, int pitch, int plane) {
  const int n_items = n_dots * n_spans;
  for (int base = static_cast<int>(threadIdx.x); base < n_items; base += THREADS * UNROLL) {
    Span sp[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int item = min(base + u * THREADS, n_items - 1);
      decode_row_span<Dec>(row_of(item / n_spans), item % n_spans, sp[u]);
    }
#pragma unroll 1
    for (int t = 0; t < n_tok; ++t) {
      const unsigned char* a = act + static_cast<uint64_t>(t) * act_stride;
      uint32_t q[UNROLL][8];
      float da[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) load_q8_1(a, min(base + u * THREADS, n_items - 1) % n_spans, q[u], da[u]);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int item = min(base + u * THREADS, n_items - 1);
        const float p = span_partial<Dec>(sp[u], q[u], da[u]);
        if (base + u * THREADS < n_items) part[t * plane + (item / n_spans) * pitch + item % n_spans] = p;
      }
    }
  }
}

// Each dot's canonical value from its partials: out(d, value) is called once per dot (by the dot's first thread).
// Every thread of the block must call this (the tree shuffles).
template <int THREADS, class Out>
__device__ inline void block_reduce(int n_dots, int n_spans, const float* part, int pitch, Out out) {
  const int r = static_cast<int>(threadIdx.x) % kAccumulators;
  for (int d0 = 0; d0 < n_dots; d0 += THREADS / kAccumulators) {
    const int d = d0 + static_cast<int>(threadIdx.x) / kAccumulators;
    const float a = d < n_dots ? accumulator_chain(part + d * pitch, n_spans, r) : 0.0f;
    const float v = tree8(a);
    if (r == 0 && d < n_dots) out(d, v);
  }
}

}  // namespace strata::gpu
