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

// Eight lanes of an expert's hidden row: the biases added (bg, bu may be NULL), then the activation.
struct HiddenLanes {
  const float *g, *u, *bg, *bu;
  bool oai;
  __m256 alpha, limit, neg_limit;
};
STRATA_INLINE_AVX2 __m256 load_n(const float* p, int n) { return n == 8 ? _mm256_loadu_ps(p) : load_partial(p, n); }
STRATA_INLINE_AVX2 __m256 hidden8(const HiddenLanes& l, int64_t i, int rest) {
  __m256 g = load_n(l.g + i, rest), u = load_n(l.u + i, rest);
  if (l.bg != nullptr) g = _mm256_add_ps(g, load_n(l.bg + i, rest));
  if (l.bu != nullptr) u = _mm256_add_ps(u, load_n(l.bu + i, rest));
  return l.oai ? swiglu_oai_c8(g, u, l.alpha, l.limit, l.neg_limit) : swiglu_c8(g, u);
}

}  // namespace

STRATA_AVX2 void expert_hidden_row(const float* g, const float* u, const float* bg, const float* bu, uint32_t activation,
                                   float alpha, float limit, float* out, int64_t n) {
  const HiddenLanes l{g, u, bg, bu, activation == 1, _mm256_set1_ps(alpha), _mm256_set1_ps(limit),
                      _mm256_set1_ps(-limit)};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, hidden8(l, i, 8));
  if (i < n) {
    const int rest = static_cast<int>(n - i);
    store_partial(out + i, hidden8(l, i, rest), rest);
  }
}

STRATA_AVX2 void bias_scale_row(float* row, const float* b, float w, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 y = _mm256_loadu_ps(row + i);
    if (b != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(b + i));
    _mm256_storeu_ps(row + i, _mm256_mul_ps(wv, y));
  }
  for (; i < n; ++i) row[i] = w * (b != nullptr ? row[i] + b[i] : row[i]);
}

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
