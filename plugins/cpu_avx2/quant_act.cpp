#include "quant_act.hpp"

#include <cstring>

#include "simd.hpp"

namespace strata::cpu {
namespace {

constexpr int kPerSpan = 6;  // da, qlo, qhi, qsum_f, qlo_f, qhi_f

// roundf on each lane (halves away from zero), exactly: the fraction v - trunc(v) is exact for |v| < 2^23.
STRATA_INLINE_AVX2 __m256 round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
  const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
  const __m256 away = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(t, _mm256_and_ps(away, _mm256_or_ps(sign, _mm256_set1_ps(1.0f))));
}

// Eight per-block vectors reduced lane-wise into one vector holding each block's total (lane b: block b).
STRATA_INLINE_AVX2 __m256i sum_per_block(const __m256i (&v)[8]) {
  const __m256i x = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i y = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(x, y, 0x20), _mm256_permute2x128_si256(x, y, 0x31));
}

// [a0 a1 b0 b1] maxed with [a2 a3 b2 b3], per 128-bit half.
STRATA_INLINE_AVX2 __m256 fold_max(__m256 a, __m256 b) {
  return _mm256_max_ps(_mm256_shuffle_ps(a, b, 0x44), _mm256_shuffle_ps(a, b, 0xee));
}

STRATA_INLINE_AVX2 __m256 max_per_block(const __m256 (&v)[8]) {
  __m256 h[4];
  for (int i = 0; i < 4; ++i) {
    h[i] = _mm256_max_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  const __m256 x = fold_max(h[0], h[1]), y = fold_max(h[2], h[3]);
  return _mm256_max_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
}

// Eight blocks of 32 values (256 floats), as format::quantize_row_q8_1 computes each: amax, d = amax / 127,
// id = 1/d (0 when d is 0), q = roundf(x * id); the kernels use the fp16-rounded d (F16C rounds to nearest even,
// as fp32_to_fp16 does). Lane b of every per-block vector is block b.
STRATA_AVX2 void quantize_group(const float* x, int8_t* q, float* da, int32_t* qlo, int32_t* qhi) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m[8];
  for (int b = 0; b < 8; ++b) {
    const float* xb = x + 32 * b;
    m[b] = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb), abs_mask),
                                       _mm256_and_ps(_mm256_loadu_ps(xb + 8), abs_mask)),
                         _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(xb + 16), abs_mask),
                                       _mm256_and_ps(_mm256_loadu_ps(xb + 24), abs_mask)));
  }
  const __m256 d = _mm256_div_ps(max_per_block(m), _mm256_set1_ps(127.0f));
  const __m256 nonzero = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  const __m256 id = _mm256_and_ps(nonzero, _mm256_div_ps(_mm256_set1_ps(1.0f), d));
  _mm256_storeu_ps(da, _mm256_cvtph_ps(_mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  __m256i lo[8], hi[8];
  for (int b = 0; b < 8; ++b) {
    const __m256 idb = _mm256_permutevar8x32_ps(id, _mm256_set1_epi32(b));
    __m256i qi[4];
    for (int i = 0; i < 4; ++i) {
      qi[i] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * b + 8 * i), idb)));
    }
    // Pack 32 int32 to int8 in order: packs interleave 128-bit lanes, the permute restores element order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    lo[b] = _mm256_add_epi32(qi[0], qi[1]);
    hi[b] = _mm256_add_epi32(qi[2], qi[3]);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qlo), sum_per_block(lo));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qhi), sum_per_block(hi));
}

// The exact float forms of the sums, for the offset terms.
STRATA_AVX2 void float_sums(const int32_t* qlo, const int32_t* qhi, float* qsum_f, float* qlo_f, float* qhi_f,
                            int64_t spans) {
  for (int64_t j = 0; j < spans; j += 8) {
    const __m256i l = load256(qlo + j), h = load256(qhi + j);
    _mm256_storeu_ps(qsum_f + j, _mm256_cvtepi32_ps(_mm256_add_epi32(l, h)));
    _mm256_storeu_ps(qlo_f + j, _mm256_cvtepi32_ps(l));
    _mm256_storeu_ps(qhi_f + j, _mm256_cvtepi32_ps(h));
  }
}

}  // namespace

void QuantRows::resize(int64_t rows, int64_t n) {
  n_ = n;
  padded_ = padded_values(n);
  const int64_t spans = padded_ / 32;
  row_bytes_ = padded_ + spans * 4 * kPerSpan;  // values, then the per-span arrays (4 bytes each)
  base_ = storage_.reserve(static_cast<size_t>(rows * row_bytes_ > 0 ? rows * row_bytes_ : 64));
}

QuantRow QuantRows::row(int64_t r) const {
  unsigned char* b = base(r);
  const int64_t spans = padded_ / 32;
  const auto arr = [&](int k) { return b + padded_ + 4 * spans * k; };
  return {reinterpret_cast<const int8_t*>(b),      reinterpret_cast<const float*>(arr(0)),
          reinterpret_cast<const int32_t*>(arr(1)), reinterpret_cast<const int32_t*>(arr(2)),
          reinterpret_cast<const float*>(arr(3)),   reinterpret_cast<const float*>(arr(4)),
          reinterpret_cast<const float*>(arr(5))};
}

void QuantRows::quantize(int64_t r, const float* x) {
  unsigned char* b = base(r);
  const int64_t spans = padded_ / 32;
  auto* q = reinterpret_cast<int8_t*>(b);
  auto* da = reinterpret_cast<float*>(b + padded_);
  auto* qlo = reinterpret_cast<int32_t*>(b + padded_ + 4 * spans);
  auto* qhi = reinterpret_cast<int32_t*>(b + padded_ + 8 * spans);
  auto* qsum_f = reinterpret_cast<float*>(b + padded_ + 12 * spans);
  auto* qlo_f = reinterpret_cast<float*>(b + padded_ + 16 * spans);
  auto* qhi_f = reinterpret_cast<float*>(b + padded_ + 20 * spans);
  // Whole groups of 8 blocks straight from x; the last, partial group from a zero-padded copy (zero values
  // quantize to q = 0 with d = 0, the padding the kernels expect).
  const int64_t full = n_ / 256;
  for (int64_t g = 0; g < full; ++g) {
    quantize_group(x + 256 * g, q + 256 * g, da + 8 * g, qlo + 8 * g, qhi + 8 * g);
  }
  if (n_ % 256 != 0) {
    alignas(32) float tail[256] = {};
    std::memcpy(tail, x + 256 * full, static_cast<size_t>(n_ % 256) * sizeof(float));
    quantize_group(tail, q + 256 * full, da + 8 * full, qlo + 8 * full, qhi + 8 * full);
  }
  float_sums(qlo, qhi, qsum_f, qlo_f, qhi_f, spans);
}

}  // namespace strata::cpu
