// RMS_NORM: dst f32 = src0 f32 (rows of n = ne[0], over ne[1..3]) normalised, times the weight src1 f32 [n]
// (absent when src1.data is NULL). f[0] is eps. Per row, in double (docs/CANONICAL_ARITHMETIC.md section 6):
//   s = sum of x_i^2 in the 256-lane order; scale = 1 / sqrt(s / n + eps);
//   dst_i = (float)((x_i * scale) * w_i), the one rounding to float.
#include <cmath>
#include <vector>

#include "strata/format/canonical_double.hpp"

#include "ops.hpp"
#include "rows.hpp"

namespace strata::reference {

void rms_norm(const strata_op& op) {
  const char* name = "RMS_NORM";
  const strata_tensor& x = op.src[0];
  require_rowwise_f32(name, x, op.dst);
  const std::vector<float> weight = optional_row(name, "src1 (weight)", op.src[1], x.ne[0]);
  const int64_t n = x.ne[0];
  const double eps = static_cast<double>(op.f[0]);
  map_rows(x, op.dst, [&](std::vector<float>& row) {
    const double sum = format::dot_lanes_d<format::kNormLanes>(row.data(), row.data(), n);
    const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
    for (size_t k = 0; k < row.size(); ++k) {
      double y = static_cast<double>(row[k]) * scale;
      if (!weight.empty()) y = y * static_cast<double>(weight[k]);
      row[k] = static_cast<float>(y);
    }
  });
}

}  // namespace strata::reference
