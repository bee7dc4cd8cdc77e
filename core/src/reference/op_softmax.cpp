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
  const strata_tensor& dst = op.dst;
  require_type(name, "src0", x, GgmlType::F32);
  require_contiguous_rows(name, "src0", x);
  require_type(name, "dst", dst, GgmlType::F32);
  require(dst.ne[0] == x.ne[0] && dst.ne[1] == x.ne[1] && dst.ne[2] == x.ne[2] && dst.ne[3] == x.ne[3], name, "dst",
          dst, "src0's shape");
  const double s = static_cast<double>(op.f[0]);
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        std::vector<float> row = read_row(x, i1, i2, i3);
        std::vector<double> e(row.size());
        for (size_t i = 0; i < row.size(); ++i) e[i] = s * static_cast<double>(row[i]);
        const double m = *std::max_element(e.begin(), e.end());
        double total = 0.0;
        for (double& v : e) {
          v = std::exp(v - m);
          total += v;
        }
        for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(e[i] / total);
        write_row(dst, row.data(), i1, i2, i3);
      }
    }
  }
}

}  // namespace strata::reference
