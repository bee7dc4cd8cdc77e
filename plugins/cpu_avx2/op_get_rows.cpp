// GET_ROWS: dst [n_embd, n_tok] = rows src1[t] of the table src0 (any type with a decoder), decoded to floats
// with the format library's exact decoders.
#include <cstring>

#include "ops.hpp"
#include "strata/format/dequantize.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

Check check_get_rows(const strata_op& op) {
  const strata_tensor &table = op.src[0], &ids = op.src[1], &d = op.dst;
  if (auto e = check_matrix(table, "src0 (table)")) return e;
  if (!format::has_dequantize(static_cast<format::GgmlType>(table.type))) {
    return "src0 type " + type_name(table.type) + " has no decoder";
  }
  if (auto e = check_rows(ids, "src1 (ids)", format::GgmlType::I32)) return e;
  if (auto e = check_matrix(d, "dst", format::GgmlType::F32)) return e;
  if (row_count(ids) != 1) return std::string("src1 must be one row of ids");
  if (d.ne[0] != table.ne[0] || d.ne[1] != ids.ne[0]) return std::string("dst shape is not [n_embd, n_ids]");
  return std::nullopt;
}

void run_get_rows(Context& ctx, const strata_op& op) {
  const strata_tensor &table = op.src[0], &ids = op.src[1], &d = op.dst;
  const auto* id = static_cast<const int32_t*>(ids.data);
  const int64_t n = table.ne[0];
  for (int64_t t = 0; t < ids.ne[0]; ++t) {
    if (id[t] < 0 || id[t] >= table.ne[1]) {
      throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "GET_ROWS: id " + std::to_string(id[t]) + " at position " +
                                                      std::to_string(t) + " is outside the table's " +
                                                      std::to_string(table.ne[1]) + " rows");
    }
  }
  for_items(ctx, ids.ne[0], n, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      format::dequantize_row(static_cast<format::GgmlType>(table.type), row_ptr<const unsigned char>(table, id[t]),
                             row_ptr<float>(d, t), n);
    }
  });
}

}  // namespace strata::cpu
