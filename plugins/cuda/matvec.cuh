// The canonical dot products of docs/CANONICAL_ARITHMETIC.md on a GPU.
//
// Quantized weights (section 2): a warp per weight row. Lane l takes span j = l + kWarp * it, decodes it once and
// forms its partial p_j (exact integer sums, then the span's float steps) against each token's Q8_1 block j.
// Accumulator A_r (r = j mod 8) lives in lane r and receives the partials of its spans in ascending j: per
// iteration, A_r = A_r + p_r, then + the partial of lane r + 8, of lane r + 16, ... Finally the fixed tree
// ((A0+A1)+(A2+A3))+((A4+A5)+(A6+A7)) by xor-shuffles 1, 2, 4 (IEEE addition commutes, so both lanes of a pair
// hold the same bits). Lane 0 holds the dot.
//
// Float weights (section 4): eight lanes per row, lane r running accumulator r's fma chain over i = r, r + 8, ...,
// then the same tree. Every lane of a warp takes part in every shuffle: rows past the end are computed on a
// clamped row and not written.
#pragma once

#include <cstdint>
#include <type_traits>

#include "canonical_math.cuh"
#include "quant_decode.cuh"

namespace strata::gpu {

constexpr int kQ8BlockBytes = 36;  // block_q8_1: d, s (binary16), 32 int8
constexpr int kAccumulators = 8;

// ---- the span partial (section 2) -------------------------------------------------------------------------------

// The span's partial against a Q8_1 block with values q (packed as the span's g) and scale da.
template <class Dec>
__host__ __device__ inline float span_partial(const Span& sp, const uint32_t (&q)[8], float da) {
  if constexpr (Dec::kSub == 32) {
    int s0 = 0;
#pragma unroll
    for (int m = 0; m < 8; ++m) s0 = dot4(sp.g[m], q[m], s0);
    float t = sp.c[0] * static_cast<float>(s0);
    if constexpr (Dec::kOffset) {
      int q0 = 0;
#pragma unroll
      for (int m = 0; m < 8; ++m) q0 = dot4(0x01010101u, q[m], q0);
      t = fma_c(sp.b[0], static_cast<float>(q0), t);
    }
    return t * da;
  } else {
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      s0 = dot4(sp.g[m], q[m], s0);
      s1 = dot4(sp.g[m + 4], q[m + 4], s1);
    }
    float t = sp.c[0] * static_cast<float>(s0);
    t = fma_c(sp.c[1], static_cast<float>(s1), t);
    if constexpr (Dec::kOffset) {
      int q0 = 0, q1 = 0;
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        q0 = dot4(0x01010101u, q[m], q0);
        q1 = dot4(0x01010101u, q[m + 4], q1);
      }
      t = fma_c(sp.b[0], static_cast<float>(q0), t);
      t = fma_c(sp.b[1], static_cast<float>(q1), t);
    }
    return t * da;
  }
}

// Block `j` of a Q8_1 row (36-byte blocks, 4-byte aligned): its values as words and its scale.
__host__ __device__ inline void load_q8_1(const unsigned char* row, int j, uint32_t (&q)[8], float& da) {
  const unsigned char* blk = row + static_cast<int64_t>(j) * kQ8BlockBytes;
#ifdef STRATA_DEVICE_PASS
  const auto* w = reinterpret_cast<const uint32_t*>(blk);
  da = half_to_float(static_cast<uint16_t>(w[0]));
#pragma unroll
  for (int m = 0; m < 8; ++m) q[m] = w[1 + m];
#else
  uint16_t d;
  std::memcpy(&d, blk, sizeof d);
  da = half_to_float(d);
  std::memcpy(q, blk + 4, sizeof q);
#endif
}

// ---- the accumulation order -----------------------------------------------------------------------------------

// One iteration's additions into accumulator r (held by lane r < 8): the partials of lanes r, r + 8, ... in that
// order, those of spans past the row skipped. partial_of(lane) must be called by every lane (it shuffles).
template <class PartialOf>
__host__ __device__ inline float add_iteration(float acc, int r, int base, int n_spans, PartialOf partial_of) {
#pragma unroll
  for (int m = 0; m < kWarp / kAccumulators; ++m) {
    const int src = r + kAccumulators * m;
    const float v = partial_of(src);
    if (base + src < n_spans) acc = acc + v;
  }
  return acc;
}

// The fixed tree over the accumulators of lanes 0..7 (lanes 8k..8k+7 likewise): lane 8k ends with the sum.
__device__ inline float tree8(float a) {
  a = a + shfl_xor(a, 1);
  a = a + shfl_xor(a, 2);
  a = a + shfl_xor(a, 4);
  return a;
}

// ---- quantized rows --------------------------------------------------------------------------------------------

// The canonical dot of one weight row (n_spans spans) with the Q8_1 rows act[0..n), n <= NT, by the whole warp.
// out[t] is valid in lane 0.
template <class Dec, int NT>
__device__ inline void warp_dot_q(const uint8_t* row, int n_spans, const unsigned char* const (&act)[NT], int n,
                                  float (&out)[NT]) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int r = lane % kAccumulators;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  for (int base = 0; base < n_spans; base += kWarp) {
    const int j = base + lane;
    float p[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) p[t] = 0.0f;
    if (j < n_spans) {
      Span sp;
      decode_row_span<Dec>(row, j, sp);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < n) {
          uint32_t q[8];
          float da;
          load_q8_1(act[t], j, q, da);
          p[t] = span_partial<Dec>(sp, q, da);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n) acc[t] = add_iteration(acc[t], r, base, n_spans, [&](int src) { return shfl(p[t], src); });
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) out[t] = t < n ? tree8(acc[t]) : 0.0f;
}

// The canonical dots of R weight rows, each against its own Q8_1 row (one token), by the whole warp: the same
// operations as warp_dot_q<Dec, 1> per row, with the R rows' loads issued together so more bytes are in flight.
// kSameAct: every act[q] is the same row (loaded once). out[q] is valid in lane 0.
template <class Dec, int R, bool kSameAct>
__device__ inline void warp_dot_q_rows(const uint8_t* const (&rows)[R], const unsigned char* const (&act)[R],
                                       int n_spans, float (&out)[R]) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int r = lane % kAccumulators;
  float acc[R];
#pragma unroll
  for (int q = 0; q < R; ++q) acc[q] = 0.0f;
  for (int base = 0; base < n_spans; base += kWarp) {
    const int j = base + lane;
    float p[R];
#pragma unroll
    for (int q = 0; q < R; ++q) p[q] = 0.0f;
    if (j < n_spans) {
      Span sp[R];
#pragma unroll
      for (int q = 0; q < R; ++q) decode_row_span<Dec>(rows[q], j, sp[q]);
      if constexpr (kSameAct) {
        uint32_t a[8];
        float da;
        load_q8_1(act[0], j, a, da);
#pragma unroll
        for (int q = 0; q < R; ++q) p[q] = span_partial<Dec>(sp[q], a, da);
      } else {
#pragma unroll
        for (int q = 0; q < R; ++q) {
          uint32_t a[8];
          float da;
          load_q8_1(act[q], j, a, da);
          p[q] = span_partial<Dec>(sp[q], a, da);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < R; ++q) acc[q] = add_iteration(acc[q], r, base, n_spans, [&](int src) { return shfl(p[q], src); });
  }
#pragma unroll
  for (int q = 0; q < R; ++q) out[q] = tree8(acc[q]);
}

// ---- float rows (section 4) -----------------------------------------------------------------------------------

enum class FloatWeight { F32, F16, BF16 };

template <FloatWeight W>
__device__ inline float load_weight(const uint8_t* row, int64_t i) {
  if constexpr (W == FloatWeight::F32) {
    return reinterpret_cast<const float*>(row)[i];
  } else if constexpr (W == FloatWeight::F16) {
    return half_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
  } else {
    return bf16_to_float(reinterpret_cast<const uint16_t*>(row)[i]);
  }
}

// The canonical float dot of one row of n weights with the float rows x[0..nt), nt <= NT, by a group of eight
// lanes (lane r of the group runs accumulator r). out[t] is valid in the group's first lane.
template <FloatWeight W, int NT>
__device__ inline void group8_dot_f(const uint8_t* row, int64_t n, const float* const (&x)[NT], int nt,
                                    float (&out)[NT]) {
  const int r = static_cast<int>(threadIdx.x) % kAccumulators;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
#pragma unroll 4
  for (int64_t i = r; i < n; i += kAccumulators) {
    const float w = load_weight<W>(row, i);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < nt) acc[t] = fma_c(w, x[t][i], acc[t]);
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) out[t] = tree8(acc[t]);
}

// group8_dot_f for kRowTile rows at once against kTokTile float rows: every (row, token) pair runs exactly that
// chain (lane r of the group accumulator r over i = r, r + 8, ... in ascending order, fma_c, then tree8), so the
// bits are group8_dot_f's; a weight and a column value loaded once serve kTokTile and kRowTile products (the
// one-row form loads a column value per product). out[k][t] is valid in the group's first lane; rows[k] and x[t]
// may repeat (the caller stores only the real ones).
constexpr int kRowTile = 4, kTokTile = 8;
template <FloatWeight W>
__device__ inline void group8_dot_f_tile(const uint8_t* const (&rows)[kRowTile], int64_t n,
                                         const float* const (&x)[kTokTile], float (&out)[kRowTile][kTokTile]) {
  const int r = static_cast<int>(threadIdx.x) % kAccumulators;
  float acc[kRowTile][kTokTile];
#pragma unroll
  for (int k = 0; k < kRowTile; ++k) {
#pragma unroll
    for (int t = 0; t < kTokTile; ++t) acc[k][t] = 0.0f;
  }
#pragma unroll 2
  for (int64_t i = r; i < n; i += kAccumulators) {
    float wv[kRowTile], xv[kTokTile];
#pragma unroll
    for (int k = 0; k < kRowTile; ++k) wv[k] = load_weight<W>(rows[k], i);
#pragma unroll
    for (int t = 0; t < kTokTile; ++t) xv[t] = x[t][i];
#pragma unroll
    for (int k = 0; k < kRowTile; ++k) {
#pragma unroll
      for (int t = 0; t < kTokTile; ++t) acc[k][t] = fma_c(wv[k], xv[t], acc[k][t]);
    }
  }
#pragma unroll
  for (int k = 0; k < kRowTile; ++k) {
#pragma unroll
    for (int t = 0; t < kTokTile; ++t) out[k][t] = tree8(acc[k][t]);
  }
}

// Calls f(std::integral_constant<FloatWeight, W>{}) for a float weight type; false when `type` is not one.
template <class F>
bool with_float_weight(uint32_t type, F&& f) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::F32: f(std::integral_constant<FloatWeight, FloatWeight::F32>{}); return true;
    case GgmlType::F16: f(std::integral_constant<FloatWeight, FloatWeight::F16>{}); return true;
    case GgmlType::BF16: f(std::integral_constant<FloatWeight, FloatWeight::BF16>{}); return true;
    default: return false;
  }
}

// Tokens per warp pass for a window of n_tok tokens: the decoded span is reused for up to 8 tokens.
inline int tokens_per_pass(int64_t n_tok) { return n_tok <= 1 ? 1 : n_tok <= 2 ? 2 : n_tok <= 4 ? 4 : 8; }

// Calls f(std::integral_constant<int, NT>{}) with NT = tokens_per_pass(n_tok).
template <class F>
void with_tokens_per_pass(int64_t n_tok, F&& f) {
  switch (tokens_per_pass(n_tok)) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}

}  // namespace strata::gpu
