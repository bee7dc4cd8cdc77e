// GET_ROWS: dst f32 [n_embd, n_tok]; src0 a table [n_embd, n_rows] of any type dequantize_row decodes; src1 i32
// [n_tok] row ids. Column t of dst is row src1[t] of the table, decoded to floats (exactly as dequantize_row
// decodes it). An id outside [0, n_rows) is an error.
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {

void get_rows(const strata_op& op) {
  const char* name = "GET_ROWS";
  const strata_tensor& table = op.src[0];
  const strata_tensor& ids = op.src[1];
  const strata_tensor& dst = op.dst;
  require_data(name, "src0 (table)", table);
  require(format::has_dequantize(tensor_type(table)), name, "src0 (table)", table, "a decodable type");
  require_contiguous_rows(name, "src0 (table)", table);
  require_type(name, "src1 (ids)", ids, GgmlType::I32);
  require_type(name, "dst", dst, GgmlType::F32);
  const int64_t n_tok = ids.ne[0];
  require(dst.ne[0] == table.ne[0] && dst.ne[1] == n_tok, name, "dst", dst,
          "[" + std::to_string(table.ne[0]) + ", " + std::to_string(n_tok) + "]");
  for (int64_t t = 0; t < n_tok; ++t) {
    const int32_t id = read_i32(ids, t);
    if (id < 0 || id >= table.ne[1]) {
      throw Error("GET_ROWS: id " + std::to_string(id) + " at position " + std::to_string(t) +
                  " is outside the table's " + std::to_string(table.ne[1]) + " rows");
    }
    const std::vector<float> row = read_row(table, id);
    write_row(dst, row.data(), t);
  }
}

}  // namespace strata::reference
