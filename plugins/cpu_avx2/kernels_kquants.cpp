// Kernels of the K-quants (256-value super-blocks): one block is one group of eight spans. Q4_K/Q5_K have one
// 32-value sub-block per span with a min (offset); Q2_K, Q3_K and Q6_K have two 16-value sub-blocks per span.
#include "quant_matvec.hpp"
#include "strata/format/blocks.hpp"

namespace strata::cpu {
namespace {

using namespace format;

// Bit `kBit` of every byte moved to bit `kTo` (all other bits cleared). The 16-bit shifts carry bits across
// bytes, but only bits that come from the same byte survive the mask.
template <int kBit, int kTo>
STRATA_INLINE_AVX2 __m256i move_bit(__m256i v) {
  const __m256i mask = _mm256_set1_epi8(static_cast<char>(1 << kTo));
  if constexpr (kBit > kTo) return _mm256_and_si256(_mm256_srli_epi16(v, kBit - kTo), mask);
  if constexpr (kBit < kTo) return _mm256_and_si256(_mm256_slli_epi16(v, kTo - kBit), mask);
  return _mm256_and_si256(v, mask);
}

STRATA_INLINE_AVX2 __m256i low_nibbles(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0f)); }
STRATA_INLINE_AVX2 __m256i high_nibbles(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
}

// Splits sixteen per-16-value int8 scales into even (first sub-block of each span) and odd ones, as floats.
STRATA_INLINE_AVX2 void split_scales16(__m128i scales, __m256& even, __m256& odd) {
  const __m128i deinterleaved =
      _mm_shuffle_epi8(scales, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  even = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(deinterleaved));
  odd = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(deinterleaved, deinterleaved)));
}

// Q4_K/Q5_K's twelve bytes of 6-bit scales and mins, unpacked to eight of each.
STRATA_INLINE_AVX2 void k4_scales(const unsigned char* s, uint64_t& scales, uint64_t& mins) {
  const uint32_t a = load_scalar<uint32_t>(s), b = load_scalar<uint32_t>(s + 4), c = load_scalar<uint32_t>(s + 8);
  const uint32_t sc_lo = a & 0x3f3f3f3fu, sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
  const uint32_t m_lo = b & 0x3f3f3f3fu, m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
  scales = sc_lo | static_cast<uint64_t>(sc_hi) << 32;
  mins = m_lo | static_cast<uint64_t>(m_hi) << 32;
}

STRATA_INLINE_AVX2 __m256 negate(__m256 v) { return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); }

struct Q2_K {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_q2_K), kBias = 0;
  static constexpr bool kSigned = false, kTwoSub = true, kOffset = true;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Value 128h + 32s + l is bits 2s..2s+1 of qs[32h + l]: span 4h + s.
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load256(p + 16 + 32 * h);
      const __m256i three = _mm256_set1_epi8(3);
      g.w[4 * h + 0] = _mm256_and_si256(q, three);
      g.w[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 2), three);
      g.w[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(q, 4), three);
      g.w[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(q, 6), three);
    }
    // Scale byte k (sub-block k of 16): low nibble scales, high nibble is the min.
    const __m128i sc = load128(p);
    const __m128i m = _mm_set1_epi8(0x0f);
    __m256 sc_even, sc_odd, min_even, min_odd;
    split_scales16(_mm_and_si128(sc, m), sc_even, sc_odd);
    split_scales16(_mm_and_si128(_mm_srli_epi16(sc, 4), m), min_even, min_odd);
    const __m256 d = _mm256_set1_ps(f16_at(p + 80)), dmin = _mm256_set1_ps(f16_at(p + 82));
    g.c0 = _mm256_mul_ps(d, sc_even);
    g.c1 = _mm256_mul_ps(d, sc_odd);
    g.b0 = negate(_mm256_mul_ps(dmin, min_even));
    g.b1 = negate(_mm256_mul_ps(dmin, min_odd));
  }
};

struct Q3_K {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_q3_K), kBias = 4;
  static constexpr bool kSigned = false, kTwoSub = true, kOffset = false;
  template <int kShift>
  STRATA_INLINE_AVX2 static __m256i span(__m256i q, __m256i hmask) {
    // u = q + 4 * hbit, so that g = u - 4 (a clear hmask bit subtracts 4).
    constexpr int kSpan = kShift / 2;
    return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, kShift), _mm256_set1_epi8(3)),
                           move_bit<kSpan, 2>(hmask));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Value 128h + 32s + l is bits 2s..2s+1 of qs[32h + l] and bit 4h + s of hmask[l].
    const __m256i hm = load256(p);
    const __m256i hm_hi = _mm256_srli_epi16(hm, 4);  // bits 4..7 moved to 0..3 for the second half
    for (int h = 0; h < 2; ++h) {
      const __m256i q = load256(p + 32 + 32 * h);
      const __m256i bits = h == 0 ? hm : hm_hi;
      g.w[4 * h + 0] = span<0>(q, bits);
      g.w[4 * h + 1] = span<2>(q, bits);
      g.w[4 * h + 2] = span<4>(q, bits);
      g.w[4 * h + 3] = span<6>(q, bits);
    }
    // Sixteen 6-bit scales biased by 32: low nibbles in bytes 0..7, top bit pairs in bytes 8..11.
    const unsigned char* s = p + 96;
    const uint32_t a = load_scalar<uint32_t>(s), b = load_scalar<uint32_t>(s + 4), c = load_scalar<uint32_t>(s + 8);
    const uint32_t w0 = (a & 0x0f0f0f0fu) | ((c & 0x03030303u) << 4);
    const uint32_t w1 = (b & 0x0f0f0f0fu) | (((c >> 2) & 0x03030303u) << 4);
    const uint32_t w2 = ((a >> 4) & 0x0f0f0f0fu) | (((c >> 4) & 0x03030303u) << 4);
    const uint32_t w3 = ((b >> 4) & 0x0f0f0f0fu) | (((c >> 6) & 0x03030303u) << 4);
    const __m128i scales = _mm_sub_epi8(_mm_setr_epi32(static_cast<int>(w0), static_cast<int>(w1),
                                                       static_cast<int>(w2), static_cast<int>(w3)),
                                        _mm_set1_epi8(32));
    __m256 even, odd;
    split_scales16(scales, even, odd);
    const __m256 d = _mm256_set1_ps(f16_at(p + 108));
    g.c0 = _mm256_mul_ps(d, even);
    g.c1 = _mm256_mul_ps(d, odd);
  }
};

// Q4_K/Q5_K: c = d * scale, b = -(dmin * min) per 32-value sub-block (= span).
STRATA_INLINE_AVX2 void k4_scale_vectors(const unsigned char* p, Group& g) {
  uint64_t scales, mins;
  k4_scales(p + 4, scales, mins);
  g.c0 = _mm256_mul_ps(_mm256_set1_ps(f16_at(p)), u8x8_to_ps(scales));
  g.b0 = negate(_mm256_mul_ps(_mm256_set1_ps(f16_at(p + 2)), u8x8_to_ps(mins)));
}

// k4_scale_vectors for two blocks at once (block a in lanes 0..7, b in 8..15), the unpacking done on vectors:
// dwords [d|dmin, a, b, c] of each block's first 16 bytes give [scales lo, scales hi, mins lo, mins hi] with the
// bit operations of k4_scales.
STRATA_AVX512 inline __attribute__((always_inline)) void k4_scales_pair(const unsigned char* pa,
                                                                        const unsigned char* pb,
                                                                        avx512::ScalePair& sp) {
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(pa)), load128(pb), 1);
  const __m256i aabb = _mm256_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 1, 1));  // [a, a, b, b] per block
  const __m256i acbc = _mm256_shuffle_epi32(v, _MM_SHUFFLE(3, 2, 3, 1));  // [a, c, b, c]
  const __m256i low6 = _mm256_and_si256(aabb, _mm256_set1_epi8(0x3f));
  const __m256i c_nib = _mm256_and_si256(_mm256_srlv_epi32(acbc, _mm256_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4)),
                                         _mm256_set1_epi8(0x0f));
  const __m256i top2 = _mm256_and_si256(_mm256_srli_epi32(aabb, 2), _mm256_set1_epi8(0x30));
  // Lanes 0, 2 (per block): a & 0x3f, b & 0x3f; lanes 1, 3: c's nibble | the top two bits of a, b.
  const __m256i sm = _mm256_blend_epi32(low6, _mm256_or_si256(c_nib, top2), 0xaa);
  // [scales a | scales b | mins a | mins b] as bytes, then as 16 floats each.
  const __m256i ordered = _mm256_permute4x64_epi64(sm, _MM_SHUFFLE(3, 1, 2, 0));
  const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(ordered)));
  const __m512 mn = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(ordered, 1)));
  // d and dmin of both blocks, exactly converted: [da, dmina, ., ., db, dminb, ., .].
  const __m128 dd = _mm_cvtph_ps(_mm_unpacklo_epi32(load128(pa), load128(pb)));  // [da, dmina, db, dminb]
  const __m512 d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2),
                                         _mm512_castps128_ps512(dd));
  const __m512 dmin = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3),
                                            _mm512_castps128_ps512(dd));
  sp.c0 = _mm512_mul_ps(d, sc);
  sp.b0 = _mm512_xor_ps(_mm512_mul_ps(dmin, mn), _mm512_set1_ps(-0.0f));
}

// Per 16-bit lane: `lo` in the low half of a register, `hi` in the high half (per-half shift counts).
STRATA_AVX512 inline __attribute__((always_inline)) __m512i halves16(int lo, int hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(static_cast<short>(lo))),
                            _mm256_set1_epi16(static_cast<short>(hi)), 1);
}

// The 32 bytes at p in both halves of a register, the high half shifted right by `hi_shift` bits per 16-bit lane.
STRATA_AVX512 inline __attribute__((always_inline)) __m512i twice_shifted(const unsigned char* p, int hi_shift) {
  return _mm512_srlv_epi16(_mm512_broadcast_i64x4(load256(p)), halves16(0, hi_shift));
}

struct Q4_K {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_q4_K), kBias = 0;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = true;
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) { k4_scale_vectors(p, g); }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Each 64 values: 32 bytes of qs, low nibbles first (span 2k), then high nibbles (span 2k + 1).
    for (int k = 0; k < 4; ++k) {
      const __m256i q = load256(p + 16 + 32 * k);
      g.w[2 * k] = low_nibbles(q);
      g.w[2 * k + 1] = high_nibbles(q);
    }
    scales(p, g);
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    for (int k = 0; k < 4; ++k) w[k] = _mm512_and_si512(twice_shifted(p + 16 + 32 * k, 4), _mm512_set1_epi8(0x0f));
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void scales_pair(const unsigned char* pa,
                                                                              const unsigned char* pb,
                                                                              avx512::ScalePair& sp) {
    k4_scales_pair(pa, pb, sp);
  }
};

struct Q5_K {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_q5_K), kBias = 0;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = true;
  template <int k>
  STRATA_INLINE_AVX2 static void pair(const unsigned char* p, __m256i qh, Group& g) {
    // As Q4_K, with bit 2k (2k + 1) of qh[l] as the fifth bit of span 2k (2k + 1).
    const __m256i q = load256(p + 48 + 32 * k);
    g.w[2 * k] = _mm256_or_si256(low_nibbles(q), move_bit<2 * k, 4>(qh));
    g.w[2 * k + 1] = _mm256_or_si256(high_nibbles(q), move_bit<2 * k + 1, 4>(qh));
  }
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) { k4_scale_vectors(p, g); }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const __m256i qh = load256(p + 16);
    pair<0>(p, qh, g);
    pair<1>(p, qh, g);
    pair<2>(p, qh, g);
    pair<3>(p, qh, g);
    scales(p, g);
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    const __m512i qh = _mm512_broadcast_i64x4(load256(p + 16));
    const __m512i one = _mm512_set1_epi8(1);
    for (int k = 0; k < 4; ++k) {
      // The fifth bit: bit 2k of qh[l] for the low half (span 2k), bit 2k + 1 for the high half, moved to bit 4.
      const __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(qh, halves16(2 * k, 2 * k + 1)), one);
      const __m512i q = _mm512_and_si512(twice_shifted(p + 48 + 32 * k, 4), _mm512_set1_epi8(0x0f));
      w[k] = _mm512_or_si512(q, _mm512_slli_epi16(bit, 4));
    }
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void scales_pair(const unsigned char* pa,
                                                                              const unsigned char* pb,
                                                                              avx512::ScalePair& sp) {
    k4_scales_pair(pa, pb, sp);
  }
};

struct Q6_K {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_q6_K), kBias = 32;
  static constexpr bool kSigned = false, kTwoSub = true, kOffset = false;
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) {
    __m256 even, odd;
    split_scales16(load128(p + 192), even, odd);
    const __m256 d = _mm256_set1_ps(f16_at(p + 208));
    g.c0 = _mm256_mul_ps(d, even);
    g.c1 = _mm256_mul_ps(d, odd);
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Each 128 values: 64 bytes of ql (low nibbles), 32 of qh (two high bits per value); u = q, g = q - 32.
    const __m256i m30 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load256(p + 64 * h), l1 = load256(p + 64 * h + 32);
      const __m256i qh = load256(p + 128 + 32 * h);
      g.w[4 * h + 0] = _mm256_or_si256(low_nibbles(l0), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      g.w[4 * h + 1] = _mm256_or_si256(low_nibbles(l1), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      g.w[4 * h + 2] = _mm256_or_si256(high_nibbles(l0), _mm256_and_si256(qh, m30));
      g.w[4 * h + 3] = _mm256_or_si256(high_nibbles(l1), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    }
    scales(p, g);
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    // Spans 4h and 4h + 1 are the low nibbles of ql[64h..64h+64) (one register), with qh's bits 0-1 and 2-3 on
    // top; spans 4h + 2 and 4h + 3 the high nibbles, with bits 4-5 and 6-7.
    const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const __m512i l = _mm512_loadu_si512(p + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(load256(p + 128 + 32 * h));
      w[2 * h] = _mm512_or_si512(_mm512_and_si512(l, m0f), _mm512_and_si512(_mm512_sllv_epi16(qh, halves16(4, 2)), m30));
      w[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m0f),
                                     _mm512_and_si512(_mm512_srlv_epi16(qh, halves16(0, 2)), m30));
    }
  }
};

}  // namespace

void add_kquant_kernels(KernelTable& avx2, KernelTable& avx512) {
  add_quant_kernel<Q2_K>(avx2, avx512, GgmlType::Q2_K);
  add_quant_kernel<Q3_K>(avx2, avx512, GgmlType::Q3_K);
  add_quant_kernel<Q4_K>(avx2, avx512, GgmlType::Q4_K);
  add_quant_kernel<Q5_K>(avx2, avx512, GgmlType::Q5_K);
  add_quant_kernel<Q6_K>(avx2, avx512, GgmlType::Q6_K);
}

}  // namespace strata::cpu
