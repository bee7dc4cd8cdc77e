// The quantized matrix-vector driver for both ISA paths: avx2::quant_matvec<Decoder> and
// avx512::quant_matvec<Decoder>. They differ only in how a span's exact integer dot product is formed:
// AVX2 with maddubs/madd (the sign moved onto the activation for signed values), AVX-512 with VNNI's vpdpbusd
// (signed values biased by 128 and the bias taken back out with the activation's integer sums).
#pragma once

#include "quant_act.hpp"
#include "kernels.hpp"
#include "quant_group.hpp"
#include "strata/format/types.hpp"

namespace strata::cpu {

template <bool kSigned>
STRATA_INLINE_AVX2 __m256i span_dot_avx2(__m256i w, __m256i q) {
  const __m256i ones = _mm256_set1_epi16(1);
  // Pair sums stay within int16: |g| <= 128 and |q| <= 127 give at most 2 * 128 * 127 = 32512.
  if constexpr (kSigned) return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(q, w)), ones);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, q), ones);
}

template <bool kSigned>
STRATA_AVX512 inline __attribute__((always_inline)) __m256i span_dot_vnni(__m256i w, __m256i q) {
  if constexpr (kSigned) w = _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));  // g + 128
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, q);
}

namespace avx2 {
#define KERNEL_TARGET STRATA_AVX2
#define KERNEL_SPAN_DOT span_dot_avx2
#define KERNEL_SIGNED_BIAS 0
#include "quant_matvec.inc"
#undef KERNEL_TARGET
#undef KERNEL_SPAN_DOT
#undef KERNEL_SIGNED_BIAS
}  // namespace avx2

namespace avx512 {
#define KERNEL_TARGET STRATA_AVX512
#define KERNEL_SPAN_DOT span_dot_vnni
#define KERNEL_SIGNED_BIAS 128
#include "quant_matvec.inc"
#undef KERNEL_TARGET
#undef KERNEL_SPAN_DOT
#undef KERNEL_SIGNED_BIAS
}  // namespace avx512

// Registers decoder D's kernels for weight type `id` in both tables.
template <class D>
void add_quant_kernel(KernelTable& avx2_table, KernelTable& avx512_table, format::GgmlType id) {
  avx2_table.quant[static_cast<int>(id)] = &avx2::quant_matvec<D>;
  avx512_table.quant[static_cast<int>(id)] = &avx512::quant_matvec<D>;
}

}  // namespace strata::cpu
