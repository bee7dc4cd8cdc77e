// SOFTMAX: dst f32 = softmax(src0 f32 * f[0]) along each row of ne[0] values:
//   y_i = exp(s x_i - max_j s x_j) / sum_j exp(s x_j - max_j s x_j)   (double, rounded to float)
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"

namespace strata::reference {

void softmax(const strata_op& op) {
  const char* name = "SOFTMAX";
  const strata_tensor& x = op.src[0];
  require_rowwise_f32(name, x, op.dst);
  const double s = static_cast<double>(op.f[0]);
  map_rows(x, op.dst, [&](std::vector<float>& row) {
    std::vector<double> e(row.size());
    for (size_t i = 0; i < row.size(); ++i) e[i] = s * static_cast<double>(row[i]);
    const double m = *std::max_element(e.begin(), e.end());
    double total = 0.0;
    for (double& v : e) {
      v = std::exp(v - m);
      total += v;
    }
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(e[i] / total);
  });
}

}  // namespace strata::reference
