#include "row_math.hpp"

#include <cmath>
#include <cstring>

#include "strata/format/fp16.hpp"
#include "vec_math.hpp"

namespace strata::cpu {
namespace {

STRATA_INLINE_AVX2 __m256 load_padded(const float* p, int n, float pad) {
  alignas(32) float buf[8] = {pad, pad, pad, pad, pad, pad, pad, pad};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return _mm256_load_ps(buf);
}

}  // namespace

STRATA_AVX2 float sum_squares(const float* x, int64_t n) { return dot_f32(x, x, n); }

STRATA_AVX2 float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    const __m256 sum = _mm256_fmadd_ps(load_padded(a + i, rest, 0.0f), load_padded(b + i, rest, 0.0f), acc);
    acc = _mm256_blendv_ps(acc, sum, _mm256_castsi256_ps(lane_mask(rest)));
  }
  return tree_sum8(acc);
}

STRATA_AVX2 float max_row(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (i < n) {
    const __m256 v = load_padded(x + i, static_cast<int>(n - i), -INFINITY);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  return _mm256_movemask_ps(nan) != 0 ? NAN : tree_max8(m);
}

STRATA_AVX2 float exp_shifted_sum(const float* x, float mx, float* out, int64_t n) {
  const __m256 mv = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_c8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
    _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    const __m256 e = exp_c8(_mm256_sub_ps(load_padded(x + i, rest, 0.0f), mv));
    alignas(32) float buf[8];
    _mm256_store_ps(buf, e);
    std::memcpy(out + i, buf, static_cast<size_t>(rest) * sizeof(float));
    acc = _mm256_blendv_ps(acc, _mm256_add_ps(acc, e), _mm256_castsi256_ps(lane_mask(rest)));
  }
  return tree_sum8(acc);
}

STRATA_AVX2 void scale(const float* x, float s, float* out, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), sv));
  for (; i < n; ++i) out[i] = x[i] * s;
}

STRATA_AVX2 void scale_mul(const float* x, float s, const float* w, float* out, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), _mm256_loadu_ps(w + i)));
  }
  for (; i < n; ++i) out[i] = (x[i] * s) * w[i];
}

STRATA_AVX2 void axpy(float p, const float* v, float* acc, int64_t n) {
  const __m256 pv = _mm256_set1_ps(p);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(pv, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
  for (; i < n; ++i) acc[i] = __builtin_fmaf(p, v[i], acc[i]);
}

STRATA_AVX2 void f16_to_f32_row(const uint16_t* h, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(load128(h + i)));
  for (; i < n; ++i) out[i] = format::fp16_to_fp32(h[i]);
}

STRATA_AVX2 void f32_to_f16_row(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = format::fp32_to_fp16(x[i]);
}

}  // namespace strata::cpu
