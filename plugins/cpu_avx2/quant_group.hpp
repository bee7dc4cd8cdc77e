// What a weight type's decoder hands the shared matrix-vector driver (quant_matvec.inc): one group of eight
// 32-value spans (256 values) as small integers, and the float scale and offset of each span's sub-blocks
// (section 2 of docs/CANONICAL_ARITHMETIC.md: w = c_k * g + b_k).
//
// A decoder is a struct with
//   kBlockValues, kBlockBytes   the type's block (32 or 256 values)
//   kSigned                     g is stored as int8 in w[] (else as uint8 u with g = u - kBias)
//   kBias                       see above (0 when u is g itself)
//   kTwoSub                     16-value sub-blocks: c1 (and b1) hold the second sub-block of each span
//   kOffset                     b_k != 0: b0 (and b1) hold the offsets
//   static void decode(const unsigned char* p, int spans, Group& g)
// where p points at the group's first block and spans (1..8) says how many spans exist (only types with
// 32-value blocks get fewer than 8, at the end of a row); the rest must be zeroed.
#pragma once

#include "simd.hpp"
#include "strata/format/fp16.hpp"

namespace strata::cpu {

struct Group {
  __m256i w[8];  // span s: its 32 values in order
  __m256 c0, c1, b0, b1;
};

// Sign-extends/zero-extends eight bytes to a float vector.
STRATA_INLINE_AVX2 __m256 u8x8_to_ps(uint64_t bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
}
STRATA_INLINE_AVX2 __m256 i8x8_to_ps(uint64_t bytes) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
}

// One f16 (exact: F16C's conversion equals format::fp16_to_fp32) read from any alignment, as a float and as a
// broadcast vector.
STRATA_INLINE_AVX2 float f16_at(const unsigned char* p) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(load_scalar<uint16_t>(p))));
}
STRATA_INLINE_AVX2 __m256 f16_splat(const unsigned char* p) { return _mm256_set1_ps(f16_at(p)); }

// Splits 16 packed bytes into a span of 32 nibbles: low nibbles are values 0..15, high nibbles values 16..31.
// The bytes are loaded into both halves at once (a broadcast load, which takes no shuffle port) and the high half
// shifted and blended in: an insert would take the shuffle port that the table lookups after it need.
STRATA_INLINE_AVX2 __m256i nibbles_32(const unsigned char* p) {
  const __m256i b = _mm256_broadcastsi128_si256(load128(p));
  return _mm256_and_si256(_mm256_blend_epi32(b, _mm256_srli_epi16(b, 4), 0xf0), _mm256_set1_epi8(0x0f));
}

// Byte j of the result is 0xff when bit j of `bits` is set.
STRATA_INLINE_AVX2 __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                                                0x0202020202020202, 0x0303030303030303));
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// Negates the int8 values of q where mask bytes are 0xff (q is never -128: activations are within +-127).
STRATA_INLINE_AVX2 __m256i negate_where(__m256i q, __m256i mask) {
  return _mm256_sub_epi8(_mm256_xor_si256(q, mask), mask);
}

}  // namespace strata::cpu
