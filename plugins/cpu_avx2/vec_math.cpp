#include "vec_math.hpp"

#include <cstring>

namespace strata::cpu {
namespace {

// Loads the last n % 8 floats (zero-padded) and stores them back, so one vector body serves any length.
STRATA_INLINE_AVX2 __m256 load_partial(const float* p, int n) {
  alignas(32) float buf[8] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return _mm256_load_ps(buf);
}
STRATA_INLINE_AVX2 void store_partial(float* p, __m256 v, int n) {
  alignas(32) float buf[8];
  _mm256_store_ps(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace

STRATA_AVX2 void swiglu_row(const float* g, const float* u, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, swiglu_c8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    store_partial(out + i, swiglu_c8(load_partial(g + i, rest), load_partial(u + i, rest)), rest);
  }
}

STRATA_AVX2 void exp_row(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, exp_c8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    store_partial(out + i, exp_c8(load_partial(x + i, rest)), rest);
  }
}

}  // namespace strata::cpu
