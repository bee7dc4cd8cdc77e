// LAYER_NORM (backend 1.7): dst f32 = (x - mean) / sqrt(var + eps) * w + b per row of src0 f32 (rows of n =
// ne[0], over ne[1..3]); src1 the weight and src2 the bias f32 [n], each absent when its data is NULL; f[0] eps.
// Per row, in double: mean = sum x_i / n, var = sum (x_i - mean)^2 / n (both in ascending i);
//   dst_i = (float)(((x_i - mean) / sqrt(var + eps)) * w_i + b_i), the one rounding to float.
#include <cmath>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"

namespace strata::reference {

void layer_norm(const strata_op& op) {
  const char* name = "LAYER_NORM";
  const strata_tensor& x = op.src[0];
  const strata_tensor& w = op.src[1];
  const strata_tensor& b = op.src[2];
  const strata_tensor& dst = op.dst;
  require_type(name, "src0", x, GgmlType::F32);
  require_type(name, "dst", dst, GgmlType::F32);
  require_contiguous_rows(name, "src0", x);
  require(dst.ne[0] == x.ne[0] && dst.ne[1] == x.ne[1] && dst.ne[2] == x.ne[2] && dst.ne[3] == x.ne[3], name, "dst",
          dst, "the shape of src0");
  const std::vector<float> weight = optional_row(name, "src1 (weight)", w, x.ne[0]);
  const std::vector<float> bias = optional_row(name, "src2 (bias)", b, x.ne[0]);
  const int64_t n = x.ne[0];
  const double eps = static_cast<double>(op.f[0]);
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        std::vector<float> row = read_row(x, i1, i2, i3);
        double sum = 0.0;
        for (float v : row) sum += static_cast<double>(v);
        const double mean = sum / static_cast<double>(n);
        double sq = 0.0;
        for (float v : row) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
        const double scale = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
          const auto k = static_cast<size_t>(i);
          double y = (static_cast<double>(row[k]) - mean) * scale;
          if (!weight.empty()) y = y * static_cast<double>(weight[k]);
          if (!bias.empty()) y = y + static_cast<double>(bias[k]);
          row[k] = static_cast<float>(y);
        }
        write_row(dst, row.data(), i1, i2, i3);
      }
    }
  }
}

}  // namespace strata::reference
