#include "quant_act.hpp"

#include <cstring>

#include "simd.hpp"
#include "strata/format/fp16.hpp"

namespace strata::cpu {
namespace {

// roundf on each lane (halves away from zero), exactly: the fraction v - trunc(v) is exact for |v| < 2^23.
STRATA_INLINE_AVX2 __m256 round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
  const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
  const __m256 away = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(away, _mm256_or_ps(sign, _mm256_set1_ps(1.0f))));
}

// One block of 32 values, as format::quantize_row_q8_1 computes it: amax, d = amax / 127, id = 1/d (0 when d is
// 0), q = roundf(x * id); the kernels use the fp16-rounded d.
STRATA_AVX2 void quantize_block(const float* x, int8_t* q, float* da, int32_t* qlo, int32_t* qhi) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
                                 _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
  const float amax = tree_max8(m);
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 idv = _mm256_set1_ps(id);
  __m256i qi[4];
  for (int i = 0; i < 4; ++i) qi[i] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[i], idv)));
  // Pack 32 int32 to int8 in order: packs interleave 128-bit lanes, the permute restores element order.
  const __m256i w01 = _mm256_packs_epi32(qi[0], qi[1]);
  const __m256i w23 = _mm256_packs_epi32(qi[2], qi[3]);
  const __m256i b = _mm256_packs_epi16(w01, w23);
  const __m256i ordered = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
  const __m256i lo = _mm256_add_epi32(qi[0], qi[1]);
  const __m256i hi = _mm256_add_epi32(qi[2], qi[3]);
  __m256i s = _mm256_hadd_epi32(lo, hi);  // [lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3 | same for lanes 4..7]
  s = _mm256_hadd_epi32(s, s);            // [lo0..3, hi0..3, ., . | lo4..7, hi4..7, ., .]
  const __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  *qlo = _mm_cvtsi128_si32(t);
  *qhi = _mm_extract_epi32(t, 1);
  *da = format::fp16_to_fp32(format::fp32_to_fp16(d));
}

}  // namespace

void QuantRows::resize(int64_t rows, int64_t n) {
  n_ = n;
  padded_ = padded_values(n);
  const int64_t spans = padded_ / 32;
  row_bytes_ = padded_ + spans * 4 * 3;  // values, then da, qlo, qhi (multiples of 64 bytes: 256 | padded_)
  base_ = storage_.reserve(static_cast<size_t>(rows * row_bytes_ > 0 ? rows * row_bytes_ : 64));
}

QuantRow QuantRows::row(int64_t r) const {
  unsigned char* b = base(r);
  const int64_t spans = padded_ / 32;
  return {reinterpret_cast<const int8_t*>(b), reinterpret_cast<const float*>(b + padded_),
          reinterpret_cast<const int32_t*>(b + padded_ + 4 * spans),
          reinterpret_cast<const int32_t*>(b + padded_ + 8 * spans)};
}

void QuantRows::quantize(int64_t r, const float* x) {
  unsigned char* b = base(r);
  const int64_t spans = padded_ / 32;
  auto* q = reinterpret_cast<int8_t*>(b);
  auto* da = reinterpret_cast<float*>(b + padded_);
  auto* qlo = reinterpret_cast<int32_t*>(b + padded_ + 4 * spans);
  auto* qhi = reinterpret_cast<int32_t*>(b + padded_ + 8 * spans);
  const int64_t used = n_ / 32;
  for (int64_t j = 0; j < used; ++j) quantize_block(x + 32 * j, q + 32 * j, da + j, qlo + j, qhi + j);
  std::memset(q + n_, 0, static_cast<size_t>(padded_ - n_));
  for (int64_t j = used; j < spans; ++j) {
    da[j] = 0.0f;
    qlo[j] = 0;
    qhi[j] = 0;
  }
}

}  // namespace strata::cpu
