// The quantized matrix-vector driver for both ISA paths: avx2::quant_matvec<Decoder> and
// avx512::quant_matvec<Decoder>. They differ only in how the spans' exact integer dot products are formed.
#pragma once

#include <algorithm>

#include "quant_act.hpp"
#include "kernels.hpp"
#include "quant_group.hpp"
#include "quant_tiles.hpp"
#include "strata/format/types.hpp"

namespace strata::cpu {

// AVX2: one span per register, maddubs + madd (the sign moved onto the activation for signed values: pair
// sums stay within int16 since |g| <= 128 and |q| <= 127 give at most 2 * 128 * 127 = 32512), then a hadd tree.
template <bool kSigned>
struct SpanSumsAvx2 {
  static constexpr int kSignedBias = 0;
  const Group& g;
  STRATA_INLINE_AVX2 explicit SpanSumsAvx2(const Group& group) : g(group) {}
  template <class D>
  STRATA_INLINE_AVX2 static SpanSumsAvx2 decode(const unsigned char* p, int spans, Group& group) {
    D::decode(p, spans, group);
    return SpanSumsAvx2(group);
  }
  STRATA_INLINE_AVX2 void sums(const int8_t* q, __m256i& lo, __m256i& hi) const {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i v[8];
    for (int s = 0; s < 8; ++s) {
      const __m256i qs = load256(q + 32 * s);
      const __m256i p = kSigned ? _mm256_maddubs_epi16(_mm256_sign_epi8(g.w[s], g.w[s]), _mm256_sign_epi8(qs, g.w[s]))
                                : _mm256_maddubs_epi16(g.w[s], qs);
      v[s] = _mm256_madd_epi16(p, ones);
    }
    // [s0lo s1lo s2lo s3lo | s0hi s1hi s2hi s3hi], the same for spans 4..7; then regrouped by half.
    const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i y = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    lo = _mm256_permute2x128_si256(x, y, 0x20);
    hi = _mm256_permute2x128_si256(x, y, 0x31);
  }
};

// A decoder that can also write its values straight into AVX-512 span pairs: `scales(p, g)` fills only the scales
// and `pairs512(p, w)` the values, span 2j in the low and span 2j + 1 in the high half of w[j]. Both read a whole
// group of eight spans: a group of fewer (the end of a row of 32-value blocks) takes `decode`, which reads only
// the spans that exist.
template <class D>
concept HasPairs512 = requires(const unsigned char* p, Group& g, __m512i (&w)[4]) {
  D::scales(p, g);
  D::pairs512(p, w);
};
// Whether the group at hand can take those forms: always for 256-value blocks, a group of eight spans otherwise.
template <class D>
inline bool whole_group(int spans) {
  return D::kBlockValues == 256 || spans == 8;
}

// AVX-512 VNNI: two spans per register and vpdpbusd (u8 x s8 into int32, no saturation; signed values biased by
// 128, the bias taken back out with the activation sums), then an unpack tree and one permute.
template <bool kSigned>
struct SpanSumsAvx512 {
  static constexpr int kSignedBias = 128;
  __m512i w[4];  // spans 2j (low half) and 2j + 1 (high half)
  SpanSumsAvx512() = default;
  STRATA_AVX512 inline __attribute__((always_inline)) explicit SpanSumsAvx512(const Group& g) {
    for (int j = 0; j < 4; ++j) w[j] = _mm512_inserti64x4(_mm512_castsi256_si512(g.w[2 * j]), g.w[2 * j + 1], 1);
    bias();
  }
  template <class D>
  STRATA_AVX512 inline __attribute__((always_inline)) static SpanSumsAvx512 decode(const unsigned char* p, int spans,
                                                                                  Group& g) {
    if constexpr (HasPairs512<D>) {
      if (whole_group<D>(spans)) {
        SpanSumsAvx512 s;
        D::scales(p, g);
        D::pairs512(p, s.w);
        s.bias();
        return s;
      }
    }
    D::decode(p, spans, g);
    return SpanSumsAvx512(g);
  }
  STRATA_AVX512 inline __attribute__((always_inline)) void bias() {
    if constexpr (kSigned) {
      for (__m512i& v : w) v = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
    }
  }
  // This group's and `b`'s (another row's) span sums against the same activations, two rows per register:
  // lanes 0..7 spans 0..7 of this row, lanes 8..15 those of b. With kSplit the sums over values 0..15 (lo) and
  // 16..31 (hi) of each span, else the whole spans' sums in lo (hi untouched).
  template <bool kSplit>
  STRATA_AVX512 inline __attribute__((always_inline)) void sums_pair(const SpanSumsAvx512& b, const int8_t* q,
                                                                     __m512i& lo, __m512i& hi) const {
    __m512i da[4], db[4];
    for (int j = 0; j < 4; ++j) {
      const __m512i qj = _mm512_loadu_si512(q + 64 * j);
      da[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[j], qj);
      db[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), b.w[j], qj);
    }
    // Per row, as in sums(): chunk k = [d0_k, d1_k, d2_k, d3_k] (chunk 0, 2: halves 0..15 of even, odd spans).
    const __m512i ca = chunk_totals(da), cb = chunk_totals(db);
    // [a even spans | a odd spans | b even | b odd], for the first halves (x) and the second halves (y).
    const __m512i x = _mm512_shuffle_i32x4(ca, cb, _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i y = _mm512_shuffle_i32x4(ca, cb, _MM_SHUFFLE(3, 1, 3, 1));
    const __m512i order = _mm512_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    if constexpr (kSplit) {
      lo = _mm512_permutexvar_epi32(order, x);
      hi = _mm512_permutexvar_epi32(order, y);
    } else {
      lo = _mm512_permutexvar_epi32(order, _mm512_add_epi32(x, y));
    }
  }
  // Four registers of 16 dword sums: each 128-bit chunk k summed across its lanes, chunk k = [d0_k, .., d3_k].
  STRATA_AVX512 static inline __attribute__((always_inline)) __m512i chunk_totals(const __m512i (&d)[4]) {
    const __m512i b0 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
    const __m512i b1 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(b0, b1), _mm512_unpackhi_epi64(b0, b1));
  }
  STRATA_AVX512 inline __attribute__((always_inline)) void sums(const int8_t* q, __m256i& lo, __m256i& hi) const {
    __m512i d[4];
    for (int j = 0; j < 4; ++j) d[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[j], _mm512_loadu_si512(q + 64 * j));
    // 128-bit chunk k of d[j]: k = 0, 1 the halves of span 2j, k = 2, 3 those of span 2j + 1. Summing each chunk
    // across its four lanes for all four registers at once leaves chunk k = [d0_k, d1_k, d2_k, d3_k].
    const __m512i b0 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[0], d[1]), _mm512_unpackhi_epi32(d[0], d[1]));
    const __m512i b1 = _mm512_add_epi32(_mm512_unpacklo_epi32(d[2], d[3]), _mm512_unpackhi_epi32(d[2], d[3]));
    const __m512i c = _mm512_add_epi32(_mm512_unpacklo_epi64(b0, b1), _mm512_unpackhi_epi64(b0, b1));
    // c = [s0lo s2lo s4lo s6lo | s0hi s2hi s4hi s6hi | s1lo s3lo s5lo s7lo | s1hi s3hi s5hi s7hi]
    const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    const __m512i r = _mm512_permutexvar_epi32(order, c);
    lo = _mm512_castsi512_si256(r);
    hi = _mm512_extracti64x4_epi64(r, 1);
  }
};

namespace avx2 {
#define KERNEL_TARGET STRATA_AVX2
#define KERNEL_SPANS SpanSumsAvx2
#include "quant_matvec.inc"
#undef KERNEL_TARGET
#undef KERNEL_SPANS
}  // namespace avx2

namespace avx512 {
#define KERNEL_TARGET STRATA_AVX512
#define KERNEL_SPANS SpanSumsAvx512
#include "quant_matvec.inc"
#undef KERNEL_TARGET
#undef KERNEL_SPANS
}  // namespace avx512

namespace avx512 {

// Two rows at a time: both rows' spans share the activation loads, and the float steps of the two rows run
// side by side in one 16-lane register (lanes 0..7 the first row's eight accumulators, 8..15 the second's), each
// lane doing exactly the operations of the 8-lane driver.
STRATA_AVX512 inline __attribute__((always_inline)) __m512 pair_ps(__m256 a, __m256 b) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1);
}
STRATA_AVX512 inline __attribute__((always_inline)) __m512 twice_ps(const float* p) {
  return _mm512_broadcast_f32x8(_mm256_loadu_ps(p));
}
STRATA_AVX512 inline __attribute__((always_inline)) __m512i twice_epi32(const int32_t* p) {
  return _mm512_broadcast_i32x8(load256(p));
}

// Two rows' span scales and offsets, the first row in lanes 0..7, the second in lanes 8..15.
struct ScalePair {
  __m512 c0, c1, b0, b1;
};

// A decoder that fills a ScalePair for two rows at once: `scales_pair(pa, pb, sp)`.
template <class D>
concept HasScalePair = HasPairs512<D> && requires(const unsigned char* p, ScalePair& sp) { D::scales_pair(p, p, sp); };

// Decodes group `gi` of rows a and b: their values into sa and sb, their scales into sp.
template <class D>
STRATA_AVX512 inline __attribute__((always_inline)) void decode_pair(const unsigned char* pa, const unsigned char* pb,
                                                                     int spans, SpanSumsAvx512<D::kSigned>& sa,
                                                                     SpanSumsAvx512<D::kSigned>& sb, ScalePair& sp) {
  if constexpr (HasScalePair<D>) {
    if (whole_group<D>(spans)) {
      D::scales_pair(pa, pb, sp);
      D::pairs512(pa, sa.w);
      D::pairs512(pb, sb.w);
      sa.bias();
      sb.bias();
      return;
    }
  }
  Group ga, gb;
  sa = SpanSumsAvx512<D::kSigned>::template decode<D>(pa, spans, ga);
  sb = SpanSumsAvx512<D::kSigned>::template decode<D>(pb, spans, gb);
  sp.c0 = pair_ps(ga.c0, gb.c0);
  if constexpr (D::kTwoSub) sp.c1 = pair_ps(ga.c1, gb.c1);
  if constexpr (D::kOffset) sp.b0 = pair_ps(ga.b0, gb.b0);
  if constexpr (D::kOffset && D::kTwoSub) sp.b1 = pair_ps(ga.b1, gb.b1);
}

template <class D>
STRATA_AVX512 inline __attribute__((always_inline)) __m512 pair_partial(const ScalePair& g,
                                                                        const SpanSumsAvx512<D::kSigned>& sa,
                                                                        const SpanSumsAvx512<D::kSigned>& sb,
                                                                        const QuantRow& a, int64_t group) {
  constexpr int kBias = D::kSigned ? SpanSumsAvx512<D::kSigned>::kSignedBias : D::kBias;
  constexpr int kShift = kBias == 0 ? 0 : __builtin_ctz(kBias);
  static_assert((kBias & (kBias - 1)) == 0, "biases are powers of two");
  const int64_t s0 = group * 8;
  __m512i lo, hi;
  sa.template sums_pair<D::kTwoSub>(sb, a.qs + group * 256, lo, hi);
  __m512 t;
  if constexpr (D::kTwoSub) {
    if constexpr (kBias != 0) {
      lo = _mm512_sub_epi32(lo, _mm512_slli_epi32(twice_epi32(a.qlo + s0), kShift));
      hi = _mm512_sub_epi32(hi, _mm512_slli_epi32(twice_epi32(a.qhi + s0), kShift));
    }
    t = _mm512_mul_ps(g.c0, _mm512_cvtepi32_ps(lo));
    t = _mm512_fmadd_ps(g.c1, _mm512_cvtepi32_ps(hi), t);
    if constexpr (D::kOffset) {
      t = _mm512_fmadd_ps(g.b0, twice_ps(a.qlo_f + s0), t);
      t = _mm512_fmadd_ps(g.b1, twice_ps(a.qhi_f + s0), t);
    }
  } else {
    if constexpr (kBias != 0) {
      // The exact sum of the two halves' unbiasing: kBias * (qlo + qhi), all in int32 without overflow.
      const __m512i qsum = _mm512_add_epi32(twice_epi32(a.qlo + s0), twice_epi32(a.qhi + s0));
      lo = _mm512_sub_epi32(lo, _mm512_slli_epi32(qsum, kShift));
    }
    t = _mm512_mul_ps(g.c0, _mm512_cvtepi32_ps(lo));
    if constexpr (D::kOffset) t = _mm512_fmadd_ps(g.b0, twice_ps(a.qsum_f + s0), t);
  }
  return _mm512_mul_ps(t, twice_ps(a.da + s0));
}

template <class D>
STRATA_AVX512 void quant_matvec_pairs(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n,
                                      const QuantRow* acts, int n_tok, float* out, int64_t out_stride) {
  using SpanSums = SpanSumsAvx512<D::kSigned>;
  constexpr int kTokChunk = 8;
  constexpr int64_t kGroupBytes = 256 / D::kBlockValues * D::kBlockBytes;
  const int64_t spans = n / 32;
  const int64_t groups = (spans + 7) / 8;
  const int tail = static_cast<int>(spans % 8);
  // Lanes of the spans a partial group has, in both rows' halves.
  const __mmask16 tail_mask = static_cast<__mmask16>(((1u << tail) - 1u) * 0x0101u);
  const int64_t block_rows =
      n_tok <= kTokChunk ? rows : std::max<int64_t>(2, (96 << 10) / static_cast<int64_t>(w_stride) / 2 * 2);
  for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
    const int64_t r1 = std::min(rows, r0 + block_rows);
    const int64_t pair_end = r0 + (r1 - r0) / 2 * 2;
    for (int t0 = 0; t0 < n_tok; t0 += kTokChunk) {
      const int nt = n_tok - t0 < kTokChunk ? n_tok - t0 : kTokChunk;
      for (int64_t r = r0; r < pair_end; r += 2) {
        const unsigned char* row_a = w + static_cast<size_t>(r) * w_stride;
        const unsigned char* row_b = row_a + w_stride;
        __m512 acc[kTokChunk];
        for (int t = 0; t < nt; ++t) acc[t] = _mm512_setzero_ps();
        // The next pair's bytes are fetched as this pair's are read, at the same pace: reading two rows at
        // once interleaves two streams, which the hardware prefetchers follow less well than one.
        const unsigned char* next = row_a + 2 * w_stride;
        const bool prefetch = r + 3 < pair_end;
        for (int64_t gi = 0; gi < groups; ++gi) {
          const bool partial = tail != 0 && gi == groups - 1;
          if (prefetch) {
            for (int64_t off = 2 * gi * kGroupBytes; off < 2 * (gi + 1) * kGroupBytes; off += 64) {
              _mm_prefetch(reinterpret_cast<const char*>(next + off), _MM_HINT_T0);
            }
          }
          SpanSums sa, sb;
          ScalePair sp;
          decode_pair<D>(row_a + gi * kGroupBytes, row_b + gi * kGroupBytes, partial ? tail : 8, sa, sb, sp);
          for (int t = 0; t < nt; ++t) {
            const __m512 p = pair_partial<D>(sp, sa, sb, acts[t0 + t], gi);
            // Lanes of spans past the row's end keep their accumulator untouched.
            acc[t] = partial ? _mm512_mask_add_ps(acc[t], tail_mask, acc[t], p) : _mm512_add_ps(acc[t], p);
          }
        }
        for (int t = 0; t < nt; ++t) {
          out[(t0 + t) * out_stride + r] = tree_sum8(_mm512_castps512_ps256(acc[t]));
          out[(t0 + t) * out_stride + r + 1] = tree_sum8(_mm512_extractf32x8_ps(acc[t], 1));
        }
      }
      if (pair_end < r1) {
        quant_matvec<D>(w + static_cast<size_t>(pair_end) * w_stride, w_stride, 1, n, acts + t0, nt,
                        out + t0 * out_stride + pair_end, out_stride);
      }
    }
  }
}

}  // namespace avx512

// Registers decoder D's kernels for weight type `id` in both tables.
template <class D>
void add_quant_kernel(KernelTable& avx2_table, KernelTable& avx512_table, format::GgmlType id) {
  avx2_table.quant[static_cast<int>(id)] = &avx2::quant_matvec<D>;
  avx512_table.quant[static_cast<int>(id)] = &avx512::quant_matvec_pairs<D>;
  avx512_table.tiles[static_cast<int>(id)] = &avx512::quant_tiles<D>;
}

}  // namespace strata::cpu
