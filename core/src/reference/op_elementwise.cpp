// ADD, MUL, SWIGLU: element by element over f32 tensors of one shape, each result one rounded float operation.
//   ADD:    dst = src0 + src1      MUL: dst = src0 * src1
//   (src1 has src0's shape, or is one row of ne[0] values used for every row)
//   SWIGLU: dst = swiglu_c(src0, src1) = (g / (1 + exp_c(-g))) * u, src1 of src0's shape (canonical, section 3).
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/format/canonical.hpp"

namespace strata::reference {
namespace {

template <class Fn>
void elementwise(const strata_op& op, const char* name, bool allow_row_broadcast, Fn fn) {
  const strata_tensor& a = op.src[0];
  const strata_tensor& b = op.src[1];
  const strata_tensor& dst = op.dst;
  require_type(name, "src0", a, GgmlType::F32);
  require_type(name, "src1", b, GgmlType::F32);
  require_type(name, "dst", dst, GgmlType::F32);
  require_contiguous_rows(name, "src0", a);
  require_contiguous_rows(name, "src1", b);
  const bool same = b.ne[0] == a.ne[0] && b.ne[1] == a.ne[1] && b.ne[2] == a.ne[2] && b.ne[3] == a.ne[3];
  const bool row = allow_row_broadcast && b.ne[0] == a.ne[0] && b.ne[1] == 1 && b.ne[2] == 1 && b.ne[3] == 1;
  require(same || row, name, "src1", b, allow_row_broadcast ? "src0's shape or one row" : "src0's shape");
  require(dst.ne[0] == a.ne[0] && dst.ne[1] == a.ne[1] && dst.ne[2] == a.ne[2] && dst.ne[3] == a.ne[3], name, "dst",
          dst, "src0's shape");
  for (int64_t i3 = 0; i3 < a.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
        std::vector<float> x = read_row(a, i1, i2, i3);
        const std::vector<float> y = same ? read_row(b, i1, i2, i3) : read_row(b, 0);
        for (size_t i = 0; i < x.size(); ++i) x[i] = fn(x[i], y[i]);
        write_row(dst, x.data(), i1, i2, i3);
      }
    }
  }
}

}  // namespace

void add(const strata_op& op) {
  elementwise(op, "ADD", true, [](float x, float y) { return x + y; });
}

void mul(const strata_op& op) {
  elementwise(op, "MUL", true, [](float x, float y) { return x * y; });
}

void swiglu(const strata_op& op) {
  elementwise(op, "SWIGLU", false, [](float g, float u) { return format::swiglu_c(g, u); });
}

}  // namespace strata::reference
