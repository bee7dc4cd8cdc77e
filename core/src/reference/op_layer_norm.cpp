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
  require_rowwise_f32(name, x, op.dst);
  const std::vector<float> weight = optional_row(name, "src1 (weight)", op.src[1], x.ne[0]);
  const std::vector<float> bias = optional_row(name, "src2 (bias)", op.src[2], x.ne[0]);
  const auto n = static_cast<double>(x.ne[0]);
  const double eps = static_cast<double>(op.f[0]);
  map_rows(x, op.dst, [&](std::vector<float>& row) {
    double sum = 0.0;
    for (float v : row) sum += static_cast<double>(v);
    const double mean = sum / n;
    double sq = 0.0;
    for (float v : row) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
    const double scale = 1.0 / std::sqrt(sq / n + eps);
    for (size_t k = 0; k < row.size(); ++k) {
      double y = (static_cast<double>(row[k]) - mean) * scale;
      if (!weight.empty()) y = y * static_cast<double>(weight[k]);
      if (!bias.empty()) y = y + static_cast<double>(bias[k]);
      row[k] = static_cast<float>(y);
    }
  });
}

}  // namespace strata::reference
