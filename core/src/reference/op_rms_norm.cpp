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
  const strata_tensor& w = op.src[1];
  const strata_tensor& dst = op.dst;
  require_type(name, "src0", x, GgmlType::F32);
  require_type(name, "dst", dst, GgmlType::F32);
  require_contiguous_rows(name, "src0", x);
  require(dst.ne[0] == x.ne[0] && dst.ne[1] == x.ne[1] && dst.ne[2] == x.ne[2] && dst.ne[3] == x.ne[3], name, "dst",
          dst, "the shape of src0");
  const std::vector<float> weight = optional_row(name, "src1 (weight)", w, x.ne[0]);
  const int64_t n = x.ne[0];
  const double eps = static_cast<double>(op.f[0]);
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        std::vector<float> row = read_row(x, i1, i2, i3);
        const double sum = format::dot_lanes_d<format::kNormLanes>(row.data(), row.data(), n);
        const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
          double y = static_cast<double>(row[static_cast<size_t>(i)]) * scale;
          if (!weight.empty()) y = y * static_cast<double>(weight[static_cast<size_t>(i)]);
          row[static_cast<size_t>(i)] = static_cast<float>(y);
        }
        write_row(dst, row.data(), i1, i2, i3);
      }
    }
  }
}

}  // namespace strata::reference
