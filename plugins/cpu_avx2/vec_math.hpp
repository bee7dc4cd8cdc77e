// Vector forms of the canonical functions (docs/CANONICAL_ARITHMETIC.md section 5, format/canonical.hpp): the
// same float operations lane by lane, so each lane equals format::exp_c / silu_c / swiglu_c bit for bit.
#pragma once

#include "simd.hpp"

namespace strata::cpu {

STRATA_INLINE_AVX2 __m256 f32_splat_bits(uint32_t bits) { return _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(bits))); }

// 2^k for integer lanes k in [-126, 127], from its exponent bits.
STRATA_INLINE_AVX2 __m256 pow2_lanes(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

#ifdef STRATA_NONCANONICAL
// The benchmark-only build (STRATA_NONCANONICAL, CMakeLists.txt): a degree-5 polynomial with no range handling
// (inputs are clamped instead) and a reciprocal estimate with one Newton step instead of IEEE division.
STRATA_INLINE_AVX2 __m256 exp_c8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_fmadd_ps(k, _mm256_set1_ps(-0.69314718f), x);
  __m256 p = _mm256_set1_ps(1.0f / 120);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  return _mm256_mul_ps(p, pow2_lanes(_mm256_cvtps_epi32(k)));
}
STRATA_INLINE_AVX2 __m256 silu_c8(__m256 x) {
  const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), exp_c8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f))));
  __m256 inv = _mm256_rcp_ps(d);
  inv = _mm256_mul_ps(inv, _mm256_fnmadd_ps(d, inv, _mm256_set1_ps(2.0f)));
  return _mm256_mul_ps(x, inv);
}
#else
STRATA_INLINE_AVX2 __m256 exp_c8(__m256 x) {
  __m256 k = _mm256_mul_ps(x, f32_splat_bits(0x3fb8aa3bu));
  k = _mm256_round_ps(k, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  // rint: half to even
  __m256 r = _mm256_fmadd_ps(k, f32_splat_bits(0xbf317200u), x);           // -ln2 high part
  r = _mm256_fmadd_ps(k, f32_splat_bits(0xb5bfbe8eu), r);                  // -ln2 low part
  __m256 p = f32_splat_bits(0x39500d01u);
  p = _mm256_fmadd_ps(p, r, f32_splat_bits(0x3ab60b61u));
  p = _mm256_fmadd_ps(p, r, f32_splat_bits(0x3c088889u));
  p = _mm256_fmadd_ps(p, r, f32_splat_bits(0x3d2aaaabu));
  p = _mm256_fmadd_ps(p, r, f32_splat_bits(0x3e2aaaabu));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // p * 2^k as (p * 2^a) * 2^b: a = k, b = 0 inside the normal exponents (times 1.0 is exact, so this is the
  // spec's single multiplication); a = 127, b = k - 127 above; a = k + 126, b = -126 below.
  const __m256i ki = _mm256_cvtps_epi32(k);
  const __m256i above = _mm256_cmpgt_epi32(ki, _mm256_set1_epi32(127));
  const __m256i below = _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), ki);
  __m256i a = _mm256_blendv_epi8(ki, _mm256_set1_epi32(127), above);
  a = _mm256_blendv_epi8(a, _mm256_add_epi32(ki, _mm256_set1_epi32(126)), below);
  __m256i b = _mm256_and_si256(above, _mm256_sub_epi32(ki, _mm256_set1_epi32(127)));
  b = _mm256_blendv_epi8(b, _mm256_set1_epi32(-126), below);
  __m256 result = _mm256_mul_ps(_mm256_mul_ps(p, pow2_lanes(a)), pow2_lanes(b));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, f32_splat_bits(0xc2cff1b5u), _CMP_LT_OQ));
  result = _mm256_blendv_ps(result, f32_splat_bits(0x7f800000u), _mm256_cmp_ps(x, f32_splat_bits(0x42b17218u), _CMP_GT_OQ));
  return _mm256_blendv_ps(result, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// x / (1 + exp_c(-x)): one negation, one exp_c, one addition, one IEEE division.
STRATA_INLINE_AVX2 __m256 silu_c8(__m256 x) {
  const __m256 e = exp_c8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
#endif  // STRATA_NONCANONICAL

STRATA_INLINE_AVX2 __m256 swiglu_c8(__m256 g, __m256 u) { return _mm256_mul_ps(silu_c8(g), u); }

// format::swiglu_oai_c lane for lane: gc = min(g, limit), uc = clamp(u, -limit, limit), then
// (gc / (1 + exp_c(-(alpha * gc)))) * (uc + 1). min_ps(a, b) is `a < b ? a : b` and max_ps(a, b) `a > b ? a : b`,
// the scalar ternaries exactly: with the bound first, a NaN g or u fails the comparison and passes through.
STRATA_INLINE_AVX2 __m256 swiglu_oai_c8(__m256 g, __m256 u, __m256 alpha, __m256 limit, __m256 neg_limit) {
  const __m256 gc = _mm256_min_ps(limit, g);
  const __m256 uc = _mm256_min_ps(limit, _mm256_max_ps(neg_limit, u));
  const __m256 e = exp_c8(_mm256_xor_ps(_mm256_mul_ps(alpha, gc), _mm256_set1_ps(-0.0f)));
  const __m256 s = _mm256_div_ps(gc, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_mul_ps(s, _mm256_add_ps(uc, _mm256_set1_ps(1.0f)));
}

// swiglu over n floats: out[i] = silu_c(g[i]) * u[i] (out may alias g or u).
STRATA_AVX2 void swiglu_row(const float* g, const float* u, float* out, int64_t n);
// An expert's hidden row (strata_expert_form): out[i] = act(g[i] + bg[i], u[i] + bu[i]), each bias added only when
// given (NULL: none); act SwiGLU (activation 0) or SwiGLU-OAI with alpha and limit (1). out may alias g or u.
STRATA_AVX2 void expert_hidden_row(const float* g, const float* u, const float* bg, const float* bu, uint32_t activation,
                                   float alpha, float limit, float* out, int64_t n);
// row[i] = w * (row[i] + b[i]): a down row's bias (b may be NULL: w * row[i]) and its route weight.
STRATA_AVX2 void bias_scale_row(float* row, const float* b, float w, int64_t n);
// exp_c over n floats.
STRATA_AVX2 void exp_row(const float* x, float* out, int64_t n);

}  // namespace strata::cpu
