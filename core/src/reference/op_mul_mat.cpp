// MUL_MAT: dst f32 [n_out, n_tok] = src0 (weight [n_in, n_out]) times src1 f32 [n_in, n_tok]:
//   dst[o, t] = dot(weight row o, column t of src1)
// with the canonical arithmetic (docs/CANONICAL_ARITHMETIC.md): a quantized weight reads the column quantized
// to Q8_1 once (section 1) through canonical_dot (section 2); an F32/F16/BF16 weight reads the float column
// through canonical_dot_f (section 4). A stack of B matrices (src0 ne[2] = B, backend 1.6) multiplies src1
// [n_in, B, n_tok] head by head: dst[:, b, t] = matrix b times src1[:, b, t], each as above.
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
  require(w.ne[2] >= 1 && w.ne[3] == 1, name, "src0 (weight)", w, "a matrix [n_in, n_out] or a stack [n_in, n_out, B]");
  const int64_t stack = w.ne[2];
  require_type(name, "src1", x, GgmlType::F32);
  if (stack == 1) {
    require(x.ne[0] == w.ne[0] && x.ne[2] == 1 && x.ne[3] == 1, name, "src1", x,
            "[" + std::to_string(w.ne[0]) + ", n_tok]");
  } else {
    require(x.ne[0] == w.ne[0] && x.ne[1] == stack && x.ne[3] == 1, name, "src1", x,
            "[" + std::to_string(w.ne[0]) + ", " + std::to_string(stack) + ", n_tok] (one column per matrix)");
  }
  const int64_t n_tok = stack == 1 ? x.ne[1] : x.ne[2];
  require_type(name, "dst", dst, GgmlType::F32);
  require(dst.ne[0] == w.ne[1] && (stack == 1 ? dst.ne[1] == n_tok : dst.ne[1] == stack && dst.ne[2] == n_tok),
          name, "dst", dst,
          "[" + std::to_string(w.ne[1]) + (stack == 1 ? "" : ", " + std::to_string(stack)) + ", " +
              std::to_string(n_tok) + "]");
  if (quantized) {
    require(w.ne[0] % format::QK8_1 == 0, name, "src0 (weight)", w, "rows of a multiple of 32 values");
  }
  const int64_t n_in = w.ne[0];
  std::vector<format::block_q8_1> xq(static_cast<size_t>(n_in / format::QK8_1));
  std::vector<float> out(static_cast<size_t>(w.ne[1]));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t b = 0; b < stack; ++b) {
      const std::vector<float> col = stack == 1 ? read_row(x, t) : read_row(x, b, t);
      if (quantized) format::quantize_row_q8_1(col.data(), xq.data(), n_in);
      for (int64_t o = 0; o < w.ne[1]; ++o) {
        const unsigned char* wrow = tensor_row(w, o, b);
        out[static_cast<size_t>(o)] = quantized ? format::canonical_dot(wtype, wrow, xq.data(), n_in)
                                                : format::canonical_dot_f(wtype, wrow, col.data(), n_in);
      }
      if (stack == 1) {
        write_row(dst, out.data(), t);
      } else {
        write_row(dst, out.data(), b, t);
      }
    }
  }
}

}  // namespace strata::reference
