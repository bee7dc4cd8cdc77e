// The many-token product on AVX-512 VNNI: sixteen tokens a register (token_tiles.hpp), so that a span's eight
// vpdpbusd leave every token's exact span sum in its own lane and nothing is reduced across lanes.
//
// Rows are decoded sixteen at a time into a thread's scratch as signed bytes (kSigned types as they are, the others
// as u - kBias), with each span's scales and, per 16-value half, -128 x the sum of its values: the tokens enter
// vpdpbusd as q + 128, so a sum started at that constant ends at the exact integer sum of w x q. From there every
// lane runs the float steps of the one-token drivers (quant_matvec.inc) on its token, span by span:
//   t = c0 * S0;  t = fma(c1, S1, t);  t = fma(b0, Q0, t);  t = fma(b1, Q1, t);  p = t * da;  A[s mod 8] += p
// and out = ((A0 + A1) + (A2 + A3)) + ((A4 + A5) + (A6 + A7)), tree_sum8's order: the same bits for every token
// whichever driver ran (docs/CANONICAL_ARITHMETIC.md section 2).
#pragma once

#include <algorithm>

#include "aligned_buffer.hpp"
#include "quant_group.hpp"
#include "token_tiles.hpp"

namespace strata::cpu::avx512 {

constexpr int kTileRows = 16;  // rows decoded at once: their bytes stay in L1/L2 while every tile passes

// One row's decoded spans: values as int8, and per span the scales and the two halves' starting sums.
struct TileRow {
  int8_t* w;      // spans x 32
  int32_t* s0;    // spans: -128 x (sum of values 0..15), or of all 32 when the type has one sub-block
  int32_t* s1;    // spans: -128 x (sum of values 16..31)
  float* c0;      // spans each
  float* c1;
  float* b0;
  float* b1;
};

inline size_t tile_row_bytes(int64_t spans) { return static_cast<size_t>(spans) * (32 + 2 * 4 + 4 * 4) + 8 * 64; }

inline TileRow tile_row_at(unsigned char* base, int64_t spans) {
  // Every array padded to whole groups of eight spans (a decoded group is stored whole).
  const int64_t padded = (spans + 7) / 8 * 8;
  TileRow r;
  r.w = reinterpret_cast<int8_t*>(base);
  auto* ints = reinterpret_cast<int32_t*>(base + padded * 32);
  r.s0 = ints;
  r.s1 = ints + padded;
  auto* floats = reinterpret_cast<float*>(r.s1 + padded);
  r.c0 = floats;
  r.c1 = floats + padded;
  r.b0 = floats + 2 * padded;
  r.b1 = floats + 3 * padded;
  return r;
}

template <class D>
STRATA_AVX512 inline __attribute__((always_inline)) void decode_tile_row(const unsigned char* row, int64_t spans,
                                                                         const TileRow& out) {
  constexpr int64_t kGroupBytes = 256 / D::kBlockValues * D::kBlockBytes;
  const int64_t groups = (spans + 7) / 8;
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int have = static_cast<int>(std::min<int64_t>(8, spans - gi * 8));
    Group g;
    D::decode(row + gi * kGroupBytes, have, g);
    // The values' sums per 16-value half, for all eight spans at once: vpdpbusd against ones gives each span's
    // eight 4-value sums, then a hadd tree leaves [lo0..lo3 | hi0..hi3] for spans 0-3 (x) and 4-7 (y).
    __m256i v[8];
    for (int j = 0; j < 8; ++j) {
      const __m256i w = D::kSigned || D::kBias == 0 ? g.w[j]
                                                    : _mm256_sub_epi8(g.w[j], _mm256_set1_epi8(static_cast<char>(D::kBias)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.w + (gi * 8 + j) * 32), w);
      v[j] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), w);
    }
    const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i y = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    const __m256i lo = _mm256_permute2x128_si256(x, y, 0x20), hi = _mm256_permute2x128_si256(x, y, 0x31);
    // -128 x the sums: the tokens enter as q + 128.
    const __m256i zero = _mm256_setzero_si256();
    if constexpr (D::kTwoSub) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.s0 + gi * 8), _mm256_sub_epi32(zero, _mm256_slli_epi32(lo, 7)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.s1 + gi * 8), _mm256_sub_epi32(zero, _mm256_slli_epi32(hi, 7)));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.s0 + gi * 8),
                          _mm256_sub_epi32(zero, _mm256_slli_epi32(_mm256_add_epi32(lo, hi), 7)));
    }
    _mm256_storeu_ps(out.c0 + gi * 8, g.c0);
    if constexpr (D::kTwoSub) _mm256_storeu_ps(out.c1 + gi * 8, g.c1);
    if constexpr (D::kOffset) _mm256_storeu_ps(out.b0 + gi * 8, g.b0);
    if constexpr (D::kOffset && D::kTwoSub) _mm256_storeu_ps(out.b1 + gi * 8, g.b1);
  }
}

// Span s of decoded rows against a tile, for kRows rows (1 or 2: two rows share each load of the tile): each
// token's p (quant_matvec.inc's float steps, lane = token) in p[i].
template <class D, int kRows>
STRATA_AVX512 inline __attribute__((always_inline)) void tile_span(const TileRow* r, const TokenTile& tile, int64_t s,
                                                                   __m512 (&p)[kRows]) {
  const __m512i* x = reinterpret_cast<const __m512i*>(tile.xt) + s * 8;
  __m512i lo[kRows], hi[kRows];
  for (int i = 0; i < kRows; ++i) {
    lo[i] = _mm512_set1_epi32(r[i].s0[s]);
    if constexpr (D::kTwoSub) hi[i] = _mm512_set1_epi32(r[i].s1[s]);
  }
  for (int k = 0; k < 8; ++k) {
    const __m512i xk = _mm512_load_si512(x + k);
    for (int i = 0; i < kRows; ++i) {
      const __m512i wk = _mm512_set1_epi32(load_scalar<int32_t>(r[i].w + s * 32 + 4 * k));
      if (D::kTwoSub && k >= 4) {
        hi[i] = _mm512_dpbusd_epi32(hi[i], xk, wk);
      } else {
        lo[i] = _mm512_dpbusd_epi32(lo[i], xk, wk);
      }
    }
  }
  const __m512 da = _mm512_load_ps(tile.da + s * kTileTokens);
  for (int i = 0; i < kRows; ++i) {
    __m512 t = _mm512_mul_ps(_mm512_set1_ps(r[i].c0[s]), _mm512_cvtepi32_ps(lo[i]));
    if constexpr (D::kTwoSub) {
      t = _mm512_fmadd_ps(_mm512_set1_ps(r[i].c1[s]), _mm512_cvtepi32_ps(hi[i]), t);
      if constexpr (D::kOffset) {
        t = _mm512_fmadd_ps(_mm512_set1_ps(r[i].b0[s]), _mm512_load_ps(tile.qlo_f + s * kTileTokens), t);
        t = _mm512_fmadd_ps(_mm512_set1_ps(r[i].b1[s]), _mm512_load_ps(tile.qhi_f + s * kTileTokens), t);
      }
    } else if constexpr (D::kOffset) {
      t = _mm512_fmadd_ps(_mm512_set1_ps(r[i].b0[s]), _mm512_load_ps(tile.qsum_f + s * kTileTokens), t);
    }
    p[i] = _mm512_mul_ps(t, da);
  }
}

// Rows r[0..kRows) against one tile: their outputs for the tile's tokens.
template <class D, int kRows>
STRATA_AVX512 inline __attribute__((always_inline)) void tile_rows(const TileRow* r, const TokenTile& tile,
                                                                   int64_t spans, float* out, int64_t out_stride) {
  const int64_t full = spans / 8 * 8;
  __m512 acc[kRows][8];
  for (auto& row : acc) {
    for (__m512& a : row) a = _mm512_setzero_ps();
  }
  __m512 p[kRows];
  // Every index into acc is a constant after unrolling, so the accumulators stay in registers.
  for (int64_t s = 0; s < full; s += 8) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      tile_span<D, kRows>(r, tile, s + j, p);
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) acc[i][j] = _mm512_add_ps(acc[i][j], p[i]);
    }
  }
  if (full < spans) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      if (full + j < spans) {
        tile_span<D, kRows>(r, tile, full + j, p);
#pragma GCC unroll 2
        for (int i = 0; i < kRows; ++i) acc[i][j] = _mm512_add_ps(acc[i][j], p[i]);
      }
    }
  }
  for (int i = 0; i < kRows; ++i) {
    const __m512* a = acc[i];
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])),
                                     _mm512_add_ps(_mm512_add_ps(a[4], a[5]), _mm512_add_ps(a[6], a[7])));
    alignas(64) float lanes[kTileTokens];
    _mm512_store_ps(lanes, sum);
    for (int t = 0; t < tile.n_tok; ++t) out[t * out_stride + i] = lanes[t];
  }
}

// out[(16 i + t) * out_stride + r] = dot(weight row r, token t of tiles[i]) for r < rows and the tiles' tokens.
template <class D>
STRATA_AVX512 void quant_tiles(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n, const TokenTile* tiles,
                               int n_tiles, float* out, int64_t out_stride) {
  const int64_t spans = n / 32;
  const size_t row_bytes = tile_row_bytes(spans);
  thread_local AlignedBuffer scratch;
  auto* base = static_cast<unsigned char*>(scratch.reserve(row_bytes * kTileRows));
  for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kTileRows, rows - r0));
    TileRow dec[kTileRows];
    for (int i = 0; i < nr; ++i) {
      dec[i] = tile_row_at(base + i * row_bytes, spans);
      decode_tile_row<D>(w + static_cast<size_t>(r0 + i) * w_stride, spans, dec[i]);
    }
    for (int ti = 0; ti < n_tiles; ++ti) {
      float* o = out + static_cast<int64_t>(ti) * kTileTokens * out_stride + r0;
      int i = 0;
      for (; i + 2 <= nr; i += 2) tile_rows<D, 2>(dec + i, tiles[ti], spans, o + i, out_stride);
      if (i < nr) tile_rows<D, 1>(dec + i, tiles[ti], spans, o + i, out_stride);
    }
  }
}

}  // namespace strata::cpu::avx512
