// RMS_NORM: dst = src0 * (1 / sqrt(mean(x^2) + eps)) * src1, per row (src1 is one weight row of n, or absent
// when its data is NULL). In double, rounded to float once (docs/CANONICAL_ARITHMETIC.md section 6): the sum of
// squares in the 256-lane order, scale = 1 / sqrt(s / n + eps), dst_i = (float)((x_i * scale) * w_i).
#include <cmath>

#include "ops.hpp"
#include "row_math.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

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

}  // namespace strata::cpu
