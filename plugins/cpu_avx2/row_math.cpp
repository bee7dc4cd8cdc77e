#include "row_math.hpp"

#include <cstring>

#include "strata/format/fp16.hpp"

namespace strata::cpu {
namespace {

// Four floats of p as doubles, lanes past n zero.
STRATA_INLINE_AVX2 __m256d load4_pd(const float* p, int64_t n) {
  if (n >= 4) return _mm256_cvtps_pd(_mm_loadu_ps(p));
  alignas(16) float buf[4] = {};
  if (n > 0) std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return _mm256_cvtps_pd(_mm_load_ps(buf));
}

// The 32 accumulators' tree: m = 16 adds registers r and r + 4, m = 8 registers r and r + 2, m = 4 the last two,
// then lanes.
STRATA_INLINE_AVX2 double tree32(__m256d (&acc)[8]) {
  for (int r = 0; r < 4; ++r) acc[r] = _mm256_add_pd(acc[r], acc[r + 4]);
  for (int r = 0; r < 2; ++r) acc[r] = _mm256_add_pd(acc[r], acc[r + 2]);
  const __m256d w = _mm256_add_pd(acc[0], acc[1]);
  alignas(32) double l[4];
  _mm256_store_pd(l, w);
  return (l[0] + l[2]) + (l[1] + l[3]);
}

}  // namespace

STRATA_AVX2 double dot32_d(const float* a, const float* b, int64_t n) {
  // Register r, lane j holds accumulator 4r + j: element i goes to accumulator i mod 32.
  __m256d acc[8];
  for (auto& r : acc) r = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 32) {
    for (int r = 0; r < 8; ++r) {
      const int64_t at = i + 4 * r;
      // Padding adds +0.0, which leaves an accumulator unchanged (none is ever -0.0: they start at +0.0).
      const __m256d p = _mm256_mul_pd(load4_pd(a + at, n - at), load4_pd(b + at, n - at));
      acc[r] = _mm256_add_pd(acc[r], p);
    }
  }
  return tree32(acc);
}

STRATA_AVX2 double dot32_dd(const double* a, const double* b, int64_t n) {
  // Register r, lane j holds accumulator 4r + j: element i goes to accumulator i mod 32.
  __m256d acc[8];
  for (auto& r : acc) r = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 32) {
    for (int r = 0; r < 8; ++r) {
      // Padding adds +0.0, which leaves an accumulator unchanged (none is ever -0.0: they start at +0.0).
      const __m256d p = _mm256_mul_pd(_mm256_loadu_pd(a + i + 4 * r), _mm256_loadu_pd(b + i + 4 * r));
      acc[r] = _mm256_add_pd(acc[r], p);
    }
  }
  return tree32(acc);
}

STRATA_AVX2 void widen_row(const float* x, double* out, int64_t n, int64_t padded) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
  for (; i < n; ++i) out[i] = static_cast<double>(x[i]);
  for (; i < padded; ++i) out[i] = 0.0;
}

STRATA_AVX2 double sum_squares256_d(const float* x, int64_t n) {
  constexpr int kLanes = 256;
  alignas(32) double acc[kLanes] = {};
  for (int64_t i = 0; i < n; i += kLanes) {
    for (int l = 0; l < kLanes; l += 4) {
      const __m256d v = load4_pd(x + i + l, n - i - l);
      _mm256_store_pd(acc + l, _mm256_add_pd(_mm256_load_pd(acc + l), _mm256_mul_pd(v, v)));
    }
  }
  for (int m = kLanes / 2; m >= 4; m /= 2) {
    for (int l = 0; l < m; l += 4) {
      _mm256_store_pd(acc + l, _mm256_add_pd(_mm256_load_pd(acc + l), _mm256_load_pd(acc + l + m)));
    }
  }
  return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

STRATA_AVX2 void scale_mul_d(const float* x, double s, const float* w, float* out, int64_t n) {
  const __m256d sv = _mm256_set1_pd(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d y = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), sv);
    if (w != nullptr) y = _mm256_mul_pd(y, _mm256_cvtps_pd(_mm_loadu_ps(w + i)));
    _mm_storeu_ps(out + i, _mm256_cvtpd_ps(y));
  }
  for (; i < n; ++i) {
    double y = static_cast<double>(x[i]) * s;
    if (w != nullptr) y = y * static_cast<double>(w[i]);
    out[i] = static_cast<float>(y);
  }
}

STRATA_AVX2 void axpy_dd(double p, const double* v, double* acc, int64_t n) {
  const __m256d pv = _mm256_set1_pd(p);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), _mm256_mul_pd(pv, _mm256_loadu_pd(v + i))));
  }
  for (; i < n; ++i) acc[i] = acc[i] + p * v[i];
}

STRATA_AVX2 void axpy_d(double p, const float* v, double* acc, int64_t n) {
  const __m256d pv = _mm256_set1_pd(p);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d t = _mm256_mul_pd(pv, _mm256_cvtps_pd(_mm_loadu_ps(v + i)));
    _mm256_storeu_pd(acc + i, _mm256_add_pd(_mm256_loadu_pd(acc + i), t));
  }
  for (; i < n; ++i) acc[i] = acc[i] + p * static_cast<double>(v[i]);
}

STRATA_AVX2 void div_to_float(const double* acc, double s, float* out, int64_t n) {
  const __m256d sv = _mm256_set1_pd(s);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, _mm256_cvtpd_ps(_mm256_div_pd(_mm256_loadu_pd(acc + i), sv)));
  for (; i < n; ++i) out[i] = static_cast<float>(acc[i] / s);
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
