// The quantized matrix-vector driver for both ISA paths: avx2::quant_matvec<Decoder> and
// avx512::quant_matvec<Decoder>. They differ only in how the spans' exact integer dot products are formed.
#pragma once

#include <algorithm>

#include "quant_act.hpp"
#include "kernels.hpp"
#include "quant_group.hpp"
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
// and `pairs512(p, w)` the values, span 2j in the low and span 2j + 1 in the high half of w[j].
template <class D>
concept HasPairs512 = requires(const unsigned char* p, Group& g, __m512i (&w)[4]) {
  D::scales(p, g);
  D::pairs512(p, w);
};

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
      SpanSumsAvx512 s;
      D::scales(p, g);
      D::pairs512(p, s.w);
      s.bias();
      return s;
    } else {
      D::decode(p, spans, g);
      return SpanSumsAvx512(g);
    }
  }
  STRATA_AVX512 inline __attribute__((always_inline)) void bias() {
    if constexpr (kSigned) {
      for (__m512i& v : w) v = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
    }
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

// Registers decoder D's kernels for weight type `id` in both tables.
template <class D>
void add_quant_kernel(KernelTable& avx2_table, KernelTable& avx512_table, format::GgmlType id) {
  avx2_table.quant[static_cast<int>(id)] = &avx2::quant_matvec<D>;
  avx512_table.quant[static_cast<int>(id)] = &avx512::quant_matvec<D>;
}

}  // namespace strata::cpu
