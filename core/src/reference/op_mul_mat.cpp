// MUL_MAT: dst f32 [n_out, n_tok] = src0 (weight [n_in, n_out]) times src1 f32 [n_in, n_tok]:
//   dst[o, t] = dot(weight row o, column t of src1)
// with the canonical arithmetic (docs/CANONICAL_ARITHMETIC.md): a quantized weight reads the column quantized
// to Q8_1 once (section 1) through canonical_dot (section 2); an F32/F16/BF16 weight reads the float column
// through canonical_dot_f (section 4).
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/quantize_activation.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {

void mul_mat(const strata_op& op) {
  const char* name = "MUL_MAT";
  const strata_tensor& w = op.src[0];
  const strata_tensor& x = op.src[1];
  const strata_tensor& dst = op.dst;
  const GgmlType wtype = tensor_type(w);
  const bool quantized = format::has_canonical_dot(wtype);
  require_data(name, "src0 (weight)", w);
  require(quantized || format::is_float_weight(wtype), name, "src0 (weight)", w,
          "a weight type with a canonical dot product");
  require_contiguous_rows(name, "src0 (weight)", w);
  require(w.ne[2] == 1 && w.ne[3] == 1, name, "src0 (weight)", w, "a matrix [n_in, n_out]");
  require_type(name, "src1", x, GgmlType::F32);
  require(x.ne[0] == w.ne[0] && x.ne[2] == 1 && x.ne[3] == 1, name, "src1", x,
          "[" + std::to_string(w.ne[0]) + ", n_tok]");
  require_type(name, "dst", dst, GgmlType::F32);
  require(dst.ne[0] == w.ne[1] && dst.ne[1] == x.ne[1], name, "dst", dst,
          "[" + std::to_string(w.ne[1]) + ", " + std::to_string(x.ne[1]) + "]");
  if (quantized) {
    require(w.ne[0] % format::QK8_1 == 0, name, "src0 (weight)", w, "rows of a multiple of 32 values");
  }
  const int64_t n_in = w.ne[0];
  std::vector<format::block_q8_1> xq(static_cast<size_t>(n_in / format::QK8_1));
  std::vector<float> out(static_cast<size_t>(w.ne[1]));
  for (int64_t t = 0; t < x.ne[1]; ++t) {
    const std::vector<float> col = read_row(x, t);
    if (quantized) format::quantize_row_q8_1(col.data(), xq.data(), n_in);
    for (int64_t o = 0; o < w.ne[1]; ++o) {
      const unsigned char* wrow = tensor_row(w, o);
      out[static_cast<size_t>(o)] = quantized ? format::canonical_dot(wtype, wrow, xq.data(), n_in)
                                              : format::canonical_dot_f(wtype, wrow, col.data(), n_in);
    }
    write_row(dst, out.data(), t);
  }
}

}  // namespace strata::reference
