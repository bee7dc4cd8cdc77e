// Kernels of the i-quants (256-value super-blocks): grid magnitudes with sign bits (IQ2_*, IQ3_*), the ternary
// grid with a shift (IQ1_S/IQ1_M: g = 8 * grid +- 1, c = dl / 8), and the non-linear table of IQ4_XS. Values are
// built as signed int8 g per span; the float scales are formed with the dequantizer's own operations.
#include "quant_matvec.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/tables.hpp"

namespace strata::cpu {
namespace {

using namespace format;

// Four 8-value grid entries with their sign masks (0xff bytes negate) as one span of int8 values.
STRATA_INLINE_AVX2 __m256i signed_grid(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3, __m256i negate) {
  const __m256i grid = _mm256_setr_epi64x(static_cast<long long>(g0), static_cast<long long>(g1),
                                          static_cast<long long>(g2), static_cast<long long>(g3));
  return negate_where(grid, negate);
}

STRATA_INLINE_AVX2 __m256i ksign_masks(uint32_t meta) {
  return _mm256_setr_epi64x(static_cast<long long>(ksigns64[meta & 127]),
                            static_cast<long long>(ksigns64[(meta >> 7) & 127]),
                            static_cast<long long>(ksigns64[(meta >> 14) & 127]),
                            static_cast<long long>(ksigns64[(meta >> 21) & 127]));
}

// Two 4-value grid entries of 32 bits per 8 values.
STRATA_INLINE_AVX2 __m256i grid32x8(const uint32_t (&g)[8]) { return load256(g); }

// IQ2_XXS/IQ2_XS/IQ2_S's scales of eight 4-bit sub-block scales s (as floats) against d, as the dequantizer forms
// each: d x (0.5 + s) x 0.25.
STRATA_INLINE_AVX2 __m256 iq2_scales8(__m256 d, __m256 s) {
  return _mm256_mul_ps(_mm256_mul_ps(d, _mm256_add_ps(_mm256_set1_ps(0.5f), s)), _mm256_set1_ps(0.25f));
}

// IQ2_XS's and IQ2_S's c0 and c1: the low and high nibbles of eight scale bytes at p + at, against d at p.
STRATA_INLINE_AVX2 void iq2_nibble_scales(const unsigned char* p, int at, Group& g) {
  const uint64_t sc = load_scalar<uint64_t>(p + at);
  const __m256 d = f16_splat(p);
  g.c0 = iq2_scales8(d, u8x8_to_ps(sc & 0x0f0f0f0f0f0f0f0full));
  g.c1 = iq2_scales8(d, u8x8_to_ps((sc >> 4) & 0x0f0f0f0f0f0f0f0full));
}

// iq2_scales8 of eight 4-bit scales as 32-bit lanes.
STRATA_INLINE_AVX2 __m256 iq2_scales8_epi32(__m256 d, __m256i s) { return iq2_scales8(d, _mm256_cvtepi32_ps(s)); }

struct IQ2_XXS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_xxs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) {
    // The eight spans' words (4 x 7 sign bits, then the scale) are dwords 1, 3, ..., 15 from p + 2.
    const __m256i lo = load256(p + 2), hi = load256(p + 34);
    const __m256i odd = _mm256_setr_epi32(1, 3, 5, 7, 0, 0, 0, 0);
    const __m256i metas = _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(lo, odd),
                                                    _mm256_permutevar8x32_epi32(hi, odd), 0x20);
    g.c0 = iq2_scales8_epi32(f16_splat(p), _mm256_srli_epi32(metas, 28));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    for (int ib = 0; ib < 8; ++ib) {
      // Per span, 8 bytes: four grid indices, then 4 x 7 sign bits and the 4-bit scale on top.
      const unsigned char* q = p + 2 + 8 * ib;
      g.w[ib] = signed_grid(iq2xxs_grid[q[0]], iq2xxs_grid[q[1]], iq2xxs_grid[q[2]], iq2xxs_grid[q[3]],
                            ksign_masks(load_scalar<uint32_t>(q + 4)));
    }
    scales(p, g);
  }
};

struct IQ2_XS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_xs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  // d @0, qs[32] (uint16: 9-bit grid index, 7-bit sign index) @2, scales[8] @66 (low nibble: values 0..15 of
  // the span, high nibble: 16..31).
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) { iq2_nibble_scales(p, 66, g); }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    for (int ib = 0; ib < 8; ++ib) {
      uint16_t q[4];  // 9-bit grid index, 7-bit sign index
      std::memcpy(q, p + 2 + 8 * ib, sizeof q);
      const __m256i neg = _mm256_setr_epi64x(
          static_cast<long long>(ksigns64[q[0] >> 9]), static_cast<long long>(ksigns64[q[1] >> 9]),
          static_cast<long long>(ksigns64[q[2] >> 9]), static_cast<long long>(ksigns64[q[3] >> 9]));
      g.w[ib] = signed_grid(iq2xs_grid[q[0] & 511], iq2xs_grid[q[1] & 511], iq2xs_grid[q[2] & 511],
                            iq2xs_grid[q[3] & 511], neg);
    }
    scales(p, g);
  }
};

struct IQ2_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq2_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  // scales[8] @74 (low nibble: values 0..15 of the span, high nibble: 16..31).
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) { iq2_nibble_scales(p, 74, g); }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* qs = p + 2;       // 32 low index bytes, then 32 sign bytes
    const unsigned char* qh = p + 66;      // two more index bits per 8 values
    for (int ib = 0; ib < 8; ++ib) {
      uint64_t grid[4];
      for (int l = 0; l < 4; ++l) grid[l] = iq2s_grid[qs[4 * ib + l] | ((qh[ib] << (8 - 2 * l)) & 0x300)];
      g.w[ib] = signed_grid(grid[0], grid[1], grid[2], grid[3],
                            bits_to_bytes(load_scalar<uint32_t>(qs + 32 + 4 * ib)));
    }
    scales(p, g);
  }
};

struct IQ3_XXS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq3_xxs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  // c = d x (0.5 + s) x 0.5, s the top 4 bits of the span's word at 66.
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) {
    const __m256 s = _mm256_cvtepi32_ps(_mm256_srli_epi32(load256(p + 66), 28));
    g.c0 = _mm256_mul_ps(_mm256_mul_ps(f16_splat(p), _mm256_add_ps(_mm256_set1_ps(0.5f), s)), _mm256_set1_ps(0.5f));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* idx = p + 2;  // 64 grid indices of 4 values each, then 8 words of signs and scale
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t meta = load_scalar<uint32_t>(p + 2 + 64 + 4 * ib);
      uint32_t grid[8];
      for (int k = 0; k < 8; ++k) grid[k] = iq3xxs_grid[idx[8 * ib + k]];
      g.w[ib] = negate_where(grid32x8(grid), ksign_masks(meta));
    }
    scales(p, g);
  }
};

struct IQ3_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq3_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) {
    // Span s's scale: nibble s of the 32-bit word at 106; c = d x (1 + 2 s).
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(load_scalar<int32_t>(p + 106)),
                                                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                         _mm256_set1_epi32(15));
    const __m256i odd = _mm256_add_epi32(_mm256_slli_epi32(nib, 1), _mm256_set1_epi32(1));
    g.c0 = _mm256_mul_ps(f16_splat(p), _mm256_cvtepi32_ps(odd));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* qs = p + 2;
    const unsigned char* qh = p + 66;
    const unsigned char* signs = p + 74;
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t grid[8];
      for (int l = 0; l < 4; ++l) {
        grid[2 * l] = iq3s_grid[qs[8 * ib + 2 * l] | ((qh[ib] << (8 - 2 * l)) & 256)];
        grid[2 * l + 1] = iq3s_grid[qs[8 * ib + 2 * l + 1] | ((qh[ib] << (7 - 2 * l)) & 256)];
      }
      g.w[ib] = negate_where(grid32x8(grid), bits_to_bytes(load_scalar<uint32_t>(signs + 4 * ib)));
    }
    scales(p, g);
  }
};

// 8 * grid (grid bytes are -1, 0, +1) plus a +-1 shift per 8 values: the IQ1 integer g.
STRATA_INLINE_AVX2 __m256i iq1_values(const uint64_t (&grid)[4], __m256i shift) {
  const __m256i v = _mm256_setr_epi64x(static_cast<long long>(grid[0]), static_cast<long long>(grid[1]),
                                       static_cast<long long>(grid[2]), static_cast<long long>(grid[3]));
  const __m256i times8 = _mm256_and_si256(_mm256_slli_epi16(v, 3), _mm256_set1_epi8(static_cast<char>(0xf8)));
  return _mm256_add_epi8(times8, shift);
}

struct IQ1_S {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq1_s), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void scales(const unsigned char* p, Group& g) {
    // c = d x (2 x ((qh >> 12) & 7) + 1) x 0.125, qh the span's 16-bit word at 34.
    const __m256i qh = _mm256_cvtepu16_epi32(load128(p + 34));
    const __m256i odd = _mm256_add_epi32(
        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7)), 1), _mm256_set1_epi32(1));
    g.c0 = _mm256_mul_ps(_mm256_mul_ps(f16_splat(p), _mm256_cvtepi32_ps(odd)), _mm256_set1_ps(0.125f));
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* qs = p + 2;
    for (int ib = 0; ib < 8; ++ib) {
      // qh: 3 index bits per 8 values (bits 0-11), a 3-bit scale (12-14, in scales()), the shift's sign (15).
      const uint16_t qh = load_scalar<uint16_t>(p + 34 + 2 * ib);
      uint64_t grid[4];
      for (int l = 0; l < 4; ++l) grid[l] = iq1s_grid[qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
      g.w[ib] = iq1_values(grid, _mm256_set1_epi8((qh & 0x8000) ? -1 : 1));
    }
    scales(p, g);
  }
};

struct IQ1_M {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq1_m), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = true, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const unsigned char* qs = p;
    const unsigned char* qh = p + 32;
    uint16_t sc[4];
    std::memcpy(sc, p + 48, sizeof sc);
    // The f16 super-block scale is spread over the top nibbles of the four scale words.
    const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                              (sc[3] & 0xf000));
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(d_bits)));
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t h0 = qh[2 * ib], h1 = qh[2 * ib + 1];
      const uint64_t grid[4] = {iq1s_grid[qs[4 * ib + 0] | ((h0 << 8) & 0x700)],
                                iq1s_grid[qs[4 * ib + 1] | ((h0 << 4) & 0x700)],
                                iq1s_grid[qs[4 * ib + 2] | ((h1 << 8) & 0x700)],
                                iq1s_grid[qs[4 * ib + 3] | ((h1 << 4) & 0x700)]};
      const auto shift_of = [](bool negative) { return negative ? static_cast<int64_t>(0xffffffffffffffffull) : 0x0101010101010101; };
      const __m256i shift = _mm256_setr_epi64x(shift_of(h0 & 0x08), shift_of(h0 & 0x80), shift_of(h1 & 0x08),
                                               shift_of(h1 & 0x80));
      g.w[ib] = iq1_values(grid, shift);
    }
    // Span ib's two 3-bit scales: bits 6 (ib % 2) and 6 (ib % 2) + 3 of word ib / 2.
    const __m256i words = _mm256_setr_epi32(sc[0], sc[0], sc[1], sc[1], sc[2], sc[2], sc[3], sc[3]);
    const __m256i at = _mm256_setr_epi32(0, 6, 0, 6, 0, 6, 0, 6);
    g.c0 = scale(d, words, at);
    g.c1 = scale(d, words, _mm256_add_epi32(at, _mm256_set1_epi32(3)));
  }
  // c = d x (2 x s + 1) x 0.125 for the 3-bit s at `shift` of each lane's word.
  STRATA_INLINE_AVX2 static __m256 scale(__m256 d, __m256i words, __m256i shift) {
    const __m256i s = _mm256_and_si256(_mm256_srlv_epi32(words, shift), _mm256_set1_epi32(7));
    const __m256i odd = _mm256_add_epi32(_mm256_slli_epi32(s, 1), _mm256_set1_epi32(1));
    return _mm256_mul_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(odd)), _mm256_set1_ps(0.125f));
  }
};

// ---- AVX-512 forms that gather: w[j] holds spans 2j and 2j + 1 (quant_matvec.hpp's pairs512), the grid entries
// fetched by one gather per register and the signs computed on vectors. The structs above, without pairs512, are
// the gather-free forms (add_gather_free_kernels); both give the same values.

// Per 64-bit lane, seven sign bits in its low bits (the rest zero): the lane's eight values to negate, the eighth
// sign being the parity of the seven (ksigns_iq2xs), bit b negating byte b.
// The 7 sign bits in each 16-bit lane's low bits (the rest zero) with their parity as the eighth (ksigns_iq2xs).
STRATA_AVX512 inline __attribute__((always_inline)) __m512i with_parity16(__m512i s7) {
  __m512i parity = _mm512_xor_si512(s7, _mm512_srli_epi16(s7, 4));
  parity = _mm512_xor_si512(parity, _mm512_srli_epi16(parity, 2));
  parity = _mm512_xor_si512(parity, _mm512_srli_epi16(parity, 1));
  return _mm512_or_si512(s7, _mm512_slli_epi16(_mm512_and_si512(parity, _mm512_set1_epi16(1)), 7));
}

// Per 64-bit lane, eight sign bits in its low byte: the lane's values to negate, bit b negating byte b.
STRATA_AVX512 inline __attribute__((always_inline)) __mmask64 sign_byte_lanes(__m512i s8) {
  // Byte 0 of each 64-bit lane to its eight bytes (bytes 0 and 8 of each 128-bit lane).
  const __m512i spread = _mm512_set_epi64(0x0808080808080808, 0, 0x0808080808080808, 0, 0x0808080808080808, 0,
                                          0x0808080808080808, 0);
  return _mm512_test_epi8_mask(_mm512_shuffle_epi8(s8, spread),
                               _mm512_set1_epi64(static_cast<long long>(0x8040201008040201ull)));
}

// Per 64-bit lane, seven sign bits in its low bits (the rest zero): the lane's values to negate, the eighth sign
// being the parity of the seven.
STRATA_AVX512 inline __attribute__((always_inline)) __mmask64 ksign_lanes(__m512i s7) {
  return sign_byte_lanes(with_parity16(s7));  // the bits above 7 are zero, so 16-bit lanes give the same parity
}

// Two 32-bit words holding 4 x 7 sign bits each (bits 0..27), dwords A and B of v: lanes 0..3 groups 0..3 of A's,
// lanes 4..7 of B's. (Each lane holds its word twice; shifts of at most 21 keep the upper copy out of bits 0..6.)
template <int A, int B>
STRATA_AVX512 inline __attribute__((always_inline)) __mmask64 ksign_words(__m128i v) {
  const __m512i words = _mm512_permutexvar_epi32(_mm512_setr_epi32(A, A, A, A, A, A, A, A, B, B, B, B, B, B, B, B),
                                                 _mm512_castsi128_si512(v));
  const __m512i shift = _mm512_set_epi64(21, 14, 7, 0, 21, 14, 7, 0);
  return ksign_lanes(_mm512_and_si512(_mm512_srlv_epi64(words, shift), _mm512_set1_epi64(127)));
}

STRATA_AVX512 inline __attribute__((always_inline)) __m512i negate_lanes(__m512i v, __mmask64 negative) {
  return _mm512_mask_sub_epi8(v, negative, _mm512_setzero_si512(), v);
}

struct IQ2_XXSGather : IQ2_XXS {
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    for (int j = 0; j < 4; ++j) {
      // Span 2j's 8 bytes (4 indices, its word) then span 2j + 1's.
      const __m128i q = load128(p + 2 + 16 * j);
      const __m128i picked = _mm_shuffle_epi8(q, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1));
      const __m512i grid = _mm512_i32gather_epi64(_mm256_cvtepu8_epi32(picked), iq2xxs_grid, 8);
      w[j] = negate_lanes(grid, ksign_words<1, 3>(q));
    }
  }
};

// IQ2_XS's and IQ2_S's scales for two rows at once (quant_matvec.hpp's scales_pair): iq2_nibble_scales with a's
// in lanes 0..7 and b's in 8..15.
STRATA_AVX512 inline __attribute__((always_inline)) void iq2_nibble_scales_pair(const unsigned char* pa,
                                                                                const unsigned char* pb, int at,
                                                                                avx512::ScalePair& sp) {
  const __m128i sc = _mm_set_epi64x(static_cast<long long>(load_scalar<uint64_t>(pb + at)),
                                    static_cast<long long>(load_scalar<uint64_t>(pa + at)));
  const __m128i lo = _mm_and_si128(sc, _mm_set1_epi8(0x0f));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(0x0f));
  const __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(f16_splat(pa)), f16_splat(pb), 1);
  const __m512 half = _mm512_set1_ps(0.5f), quarter = _mm512_set1_ps(0.25f);
  sp.c0 = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_add_ps(half, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(lo)))), quarter);
  sp.c1 = _mm512_mul_ps(_mm512_mul_ps(d, _mm512_add_ps(half, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(hi)))), quarter);
}

struct IQ2_XSGather : IQ2_XS {
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    // 32 16-bit words (a 9-bit grid index, then the 7 sign bits), eight per w[j] (spans 2j and 2j + 1); the sign
    // bytes of all 32 at once.
    const __m512i qs = _mm512_loadu_si512(p + 2);
    const __m512i index = _mm512_and_si512(qs, _mm512_set1_epi16(511));
    const __m512i s8 = with_parity16(_mm512_srli_epi16(qs, 9));
    const __m128i part[4] = {_mm512_extracti32x4_epi32(index, 0), _mm512_extracti32x4_epi32(index, 1),
                             _mm512_extracti32x4_epi32(index, 2), _mm512_extracti32x4_epi32(index, 3)};
    const __m128i sign[4] = {_mm512_extracti32x4_epi32(s8, 0), _mm512_extracti32x4_epi32(s8, 1),
                             _mm512_extracti32x4_epi32(s8, 2), _mm512_extracti32x4_epi32(s8, 3)};
    for (int j = 0; j < 4; ++j) {
      const __m512i grid = _mm512_i32gather_epi64(_mm256_cvtepu16_epi32(part[j]), iq2xs_grid, 8);
      w[j] = negate_lanes(grid, sign_byte_lanes(_mm512_cvtepu16_epi64(sign[j])));
    }
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void scales_pair(const unsigned char* pa,
                                                                              const unsigned char* pb,
                                                                              avx512::ScalePair& sp) {
    iq2_nibble_scales_pair(pa, pb, 66, sp);
  }
};

struct IQ2_SGather : IQ2_S {
  STRATA_AVX512 inline __attribute__((always_inline)) static void scales_pair(const unsigned char* pa,
                                                                              const unsigned char* pb,
                                                                              avx512::ScalePair& sp) {
    iq2_nibble_scales_pair(pa, pb, 74, sp);
  }
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    // Entry k of w[j]: qs[8j + k] plus two bits of qh[2j + k / 4] (bits 2 (k % 4)) above them; explicit signs, a
    // bit per value.
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    for (int j = 0; j < 4; ++j) {
      const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 + 8 * j)));
      const __m256i qh = _mm256_set1_epi32(load_scalar<uint16_t>(p + 66 + 2 * j));
      const __m256i high = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(qh, shift), _mm256_set1_epi32(3)), 8);
      const __m512i grid = _mm512_i32gather_epi64(_mm256_or_si256(low, high), iq2s_grid, 8);
      w[j] = negate_lanes(grid, static_cast<__mmask64>(load_scalar<uint64_t>(p + 34 + 8 * j)));
    }
  }
};

struct IQ3_XXSGather : IQ3_XXS {
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    for (int j = 0; j < 4; ++j) {
      // Sixteen 4-value entries; each 64-bit lane (8 values) takes one 7-bit sign group of its span's word.
      const __m512i grid = _mm512_i32gather_epi32(_mm512_cvtepu8_epi32(load128(p + 2 + 16 * j)), iq3xxs_grid, 4);
      w[j] = negate_lanes(grid, ksign_words<0, 1>(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 66 + 8 * j))));
    }
  }
};

struct IQ3_SGather : IQ3_S {
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    // Entry k of w[j]: qs[16j + k] plus bit k % 8 of qh[2j + k / 8] as its ninth bit; explicit signs.
    const __m512i shift = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int j = 0; j < 4; ++j) {
      const __m512i low = _mm512_cvtepu8_epi32(load128(p + 2 + 16 * j));
      const __m512i qh = _mm512_set1_epi32(load_scalar<uint16_t>(p + 66 + 2 * j));
      const __m512i high = _mm512_slli_epi32(_mm512_and_si512(_mm512_srlv_epi32(qh, shift), _mm512_set1_epi32(1)), 8);
      const __m512i grid = _mm512_i32gather_epi32(_mm512_or_si512(low, high), iq3s_grid, 4);
      w[j] = negate_lanes(grid, static_cast<__mmask64>(load_scalar<uint64_t>(p + 74 + 8 * j)));
    }
  }
};

struct IQ1_SGather : IQ1_S {
  STRATA_AVX512 inline __attribute__((always_inline)) static void pairs512(const unsigned char* p, __m512i (&w)[4]) {
    // Entry k of w[j]: qs[8j + k] plus three bits of span 2j + k / 4's word (bits 3 (k % 4)) above them; the values
    // 8 x grid + the span's shift (-1 where bit 15 of its word is set, else +1).
    const __m256i shift = _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25);
    for (int j = 0; j < 4; ++j) {
      const uint32_t words = load_scalar<uint32_t>(p + 34 + 4 * j);  // spans 2j (low half) and 2j + 1
      const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 + 8 * j)));
      const __m256i high = _mm256_slli_epi32(
          _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(words)), shift), _mm256_set1_epi32(7)),
          8);
      const __m512i grid = _mm512_i32gather_epi64(_mm256_or_si256(low, high), iq1s_grid, 8);
      const __m512i times8 = _mm512_and_si512(_mm512_slli_epi16(grid, 3), _mm512_set1_epi8(static_cast<char>(0xf8)));
      const __m512i shifts = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi8((words & 0x8000u) ? -1 : 1)),
                                                _mm256_set1_epi8((words & 0x80000000u) ? -1 : 1), 1);
      w[j] = _mm512_add_epi8(times8, shifts);
    }
  }
};

struct IQ4_XS {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_iq4_xs), kBias = 0;
  static constexpr bool kSigned = true, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    const __m256i table = _mm256_broadcastsi128_si256(load128(kvalues_iq4nl));
    for (int ib = 0; ib < 8; ++ib) g.w[ib] = _mm256_shuffle_epi8(table, nibbles_32(p + 8 + 16 * ib));
    // Span ib's 6-bit scale: nibble ib of the scales_l word at 4, and bits 2 ib, 2 ib + 1 of scales_h at 2 above it;
    // c = d x (ls - 32).
    const __m256i low = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(load_scalar<int32_t>(p + 4)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
        _mm256_set1_epi32(15));
    const __m256i high = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(load_scalar<uint16_t>(p + 2)), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_or_si256(low, _mm256_slli_epi32(high, 4));
    g.c0 = _mm256_mul_ps(f16_splat(p), _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
  }
};

}  // namespace

void add_iquant_kernels(KernelTable& avx2, KernelTable& avx512) {
  add_quant_kernel<IQ2_XXSGather>(avx2, avx512, GgmlType::IQ2_XXS);
  add_quant_kernel<IQ2_XSGather>(avx2, avx512, GgmlType::IQ2_XS);
  add_quant_kernel<IQ2_SGather>(avx2, avx512, GgmlType::IQ2_S);
  add_quant_kernel<IQ3_XXSGather>(avx2, avx512, GgmlType::IQ3_XXS);
  add_quant_kernel<IQ3_SGather>(avx2, avx512, GgmlType::IQ3_S);
  add_quant_kernel<IQ1_SGather>(avx2, avx512, GgmlType::IQ1_S);
  add_quant_kernel<IQ1_M>(avx2, avx512, GgmlType::IQ1_M);
  add_quant_kernel<IQ4_XS>(avx2, avx512, GgmlType::IQ4_XS);
}

void add_gather_free_kernels(KernelTable& avx512) {
  avx512.quant[static_cast<int>(GgmlType::IQ2_XXS)] = &avx512::quant_matvec_pairs<IQ2_XXS>;
  avx512.tiles[static_cast<int>(GgmlType::IQ2_XXS)] = &avx512::quant_tiles<IQ2_XXS>;
  avx512.quant[static_cast<int>(GgmlType::IQ2_XS)] = &avx512::quant_matvec_pairs<IQ2_XS>;
  avx512.tiles[static_cast<int>(GgmlType::IQ2_XS)] = &avx512::quant_tiles<IQ2_XS>;
  avx512.quant[static_cast<int>(GgmlType::IQ2_S)] = &avx512::quant_matvec_pairs<IQ2_S>;
  avx512.tiles[static_cast<int>(GgmlType::IQ2_S)] = &avx512::quant_tiles<IQ2_S>;
  avx512.quant[static_cast<int>(GgmlType::IQ3_XXS)] = &avx512::quant_matvec_pairs<IQ3_XXS>;
  avx512.tiles[static_cast<int>(GgmlType::IQ3_XXS)] = &avx512::quant_tiles<IQ3_XXS>;
  avx512.quant[static_cast<int>(GgmlType::IQ3_S)] = &avx512::quant_matvec_pairs<IQ3_S>;
  avx512.tiles[static_cast<int>(GgmlType::IQ3_S)] = &avx512::quant_tiles<IQ3_S>;
  avx512.quant[static_cast<int>(GgmlType::IQ1_S)] = &avx512::quant_matvec_pairs<IQ1_S>;
  avx512.tiles[static_cast<int>(GgmlType::IQ1_S)] = &avx512::quant_tiles<IQ1_S>;
}

}  // namespace strata::cpu
