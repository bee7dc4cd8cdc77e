// RMS_NORM: dst = src0 * (1 / sqrt(mean(x^2) + eps)) * src1, per row (src1 is one weight row of n, or absent
// when its data is NULL). In double, rounded to float once (docs/CANONICAL_ARITHMETIC.md section 6): the sum of
// squares in the 256-lane order, scale = 1 / sqrt(s / n + eps), dst_i = (float)((x_i * scale) * w_i).
// LAYER_NORM (backend 1.7, the vision encoder's): dst = (x - mean) / sqrt(var + eps) * src1 + src2 per row, the
// weight and the bias each absent when its data is NULL. In float, the corrected two-pass form: m = sum(x) / n;
// d_i = x_i - m, c = sum(d) / n (what m missed), var = sum(d^2) / n - c^2 (at least 0), s = 1 / sqrt(var + eps);
// dst_i = (((x_i - m) - c) * s) * w_i + b_i. Each sum runs in 32 float lanes (four registers; element i in lane
// i mod 32, the last partial vector zero-padded) joined by a fixed tree, so a row's bytes depend only on the row.
// About 1e-7 relative to the row's spread from the reference's double, whatever the row's mean.
#include <cmath>

#include "ops.hpp"
#include "row_math.hpp"
#include "simd.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {
namespace {

// Lanes i..i+7 of x, zeros past n.
STRATA_INLINE_AVX2 __m256 load_upto(const float* x, int64_t i, int64_t n) {
  return n - i >= 8 ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, lane_mask(static_cast<int>(n - i)));
}

// ((a0 + a1) + (a2 + a3)), then tree_sum8.
STRATA_INLINE_AVX2 float join32(const __m256 (&a)[4]) {
  return tree_sum8(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
}

// Sum of x[0..n) in the 32-lane order.
STRATA_AVX2 float sum32(const float* x, int64_t n) {
  __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (int64_t i = 0; i < n; i += 32) {
    for (int r = 0; r < 4 && i + 8 * r < n; ++r) a[r] = _mm256_add_ps(a[r], load_upto(x, i + 8 * r, n));
  }
  return join32(a);
}

// The sums of d_i = x_i - m and of d_i^2, in the 32-lane order (padding lanes contribute +0).
STRATA_AVX2 void deviation_sums32(const float* x, float m, int64_t n, float* sum_d, float* sum_d2) {
  __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 q[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  const __m256 mv = _mm256_set1_ps(m);
  for (int64_t i = 0; i < n; i += 32) {
    for (int r = 0; r < 4 && i + 8 * r < n; ++r) {
      const int64_t at = i + 8 * r;
      __m256 d = _mm256_sub_ps(load_upto(x, at, n), mv);
      if (n - at < 8) d = _mm256_and_ps(d, _mm256_castsi256_ps(lane_mask(static_cast<int>(n - at))));
      a[r] = _mm256_add_ps(a[r], d);
      q[r] = _mm256_add_ps(q[r], _mm256_mul_ps(d, d));
    }
  }
  *sum_d = join32(a);
  *sum_d2 = join32(q);
}

// out_i = (((x_i - m) - c) * s) * w_i + b_i, w and b each skipped when NULL. out may be x.
STRATA_AVX2 void normalize_row(const float* x, float m, float c, float s, const float* w, const float* b, float* out,
                               int64_t n) {
  const __m256 mv = _mm256_set1_ps(m), cv = _mm256_set1_ps(c), sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 y = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), cv), sv);
    if (w != nullptr) y = _mm256_mul_ps(y, _mm256_loadu_ps(w + i));
    if (b != nullptr) y = _mm256_add_ps(y, _mm256_loadu_ps(b + i));
    _mm256_storeu_ps(out + i, y);
  }
  for (; i < n; ++i) {
    float y = ((x[i] - m) - c) * s;
    if (w != nullptr) y = y * w[i];
    if (b != nullptr) y = y + b[i];
    out[i] = y;
  }
}

STRATA_AVX2 void layer_norm_row(const float* x, const float* w, const float* b, float eps, float* out, int64_t n) {
  const auto nf = static_cast<float>(n);
  const float m = sum32(x, n) / nf;
  float sum_d = 0.0f, sum_d2 = 0.0f;
  deviation_sums32(x, m, n, &sum_d, &sum_d2);
  const float c = sum_d / nf;
  const float var = std::fmax(sum_d2 / nf - c * c, 0.0f);
  normalize_row(x, m, c, 1.0f / std::sqrt(var + eps), w, b, out, n);
}

}  // namespace

Check check_rms_norm(const strata_op& op) {
  const strata_tensor &x = op.src[0], &w = op.src[1], &d = op.dst;
  if (auto e = check_rows(x, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(d, "dst", format::GgmlType::F32)) return e;
  if (w.data != nullptr) {
    if (auto e = check_rows(w, "src1 (weight)", format::GgmlType::F32)) return e;
    if (row_count(w) != 1 || w.ne[0] != x.ne[0]) return std::string("src1 must be one row as long as src0's rows");
  }
  if (d.ne[0] != x.ne[0] || row_count(d) != row_count(x)) return std::string("dst shape differs from src0");
  return std::nullopt;
}

void run_rms_norm(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &w = op.src[1], &d = op.dst;
  const int64_t n = x.ne[0];
  const double eps = static_cast<double>(op.f[0]);
  const auto* weight = static_cast<const float*>(w.data);
  for_items(ctx, row_count(x), n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* in = row_ptr<const float>(x, r);
      const double s = 1.0 / std::sqrt(sum_squares256_d(in, n) / static_cast<double>(n) + eps);
      scale_mul_d(in, s, weight, row_ptr<float>(d, r), n);
    }
  });
}

Check check_layer_norm(const strata_op& op) {
  const strata_tensor &x = op.src[0], &w = op.src[1], &b = op.src[2], &d = op.dst;
  if (auto e = check_rows(x, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(d, "dst", format::GgmlType::F32)) return e;
  const auto one_row = [&](const strata_tensor& t, const char* what) -> Check {
    if (t.data == nullptr) return std::nullopt;
    if (auto e = check_rows(t, what, format::GgmlType::F32)) return e;
    if (row_count(t) != 1 || t.ne[0] != x.ne[0]) return std::string(what) + " must be one row as long as src0's rows";
    return std::nullopt;
  };
  if (auto e = one_row(w, "src1 (weight)")) return e;
  if (auto e = one_row(b, "src2 (bias)")) return e;
  for (int k = 0; k < 4; ++k) {
    if (d.ne[k] != x.ne[k]) return std::string("dst shape differs from src0");
  }
  return check_in_place(x, d);
}

void run_layer_norm(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  const int64_t n = x.ne[0];
  const float eps = op.f[0];
  const auto* weight = static_cast<const float*>(op.src[1].data);
  const auto* bias = static_cast<const float*>(op.src[2].data);
  for_items(ctx, row_count(x), n * 3, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) layer_norm_row(row_ptr<const float>(x, r), weight, bias, eps, row_ptr<float>(d, r), n);
  });
}

}  // namespace strata::cpu
