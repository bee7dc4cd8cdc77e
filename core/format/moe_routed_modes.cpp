#include "strata/format/moe_routed_modes.hpp"

#include "strata/format/tensor_checks.hpp"

namespace strata::format {

int64_t moe_routed_dst_columns(const strata_op& op) {
  const int64_t n_tok = op.src[0].ne[1];
  return rows_out(op) ? op.src[1].ne[0] * n_tok : n_tok;
}

std::optional<std::string> check_rows_out(const strata_op& op) {
  if (op.i[2] != 0 && op.i[2] != 1) return std::string("MOE_ROUTED i[2] (rows out) must be 0 or 1");
  if (!rows_out(op)) return std::nullopt;
  if (op.src[3].data != nullptr) {
    return std::string("MOE_ROUTED rows out (i[2] = 1) takes no src3: its rows are what a later summing op reads");
  }
  if (op.i[0] != 0) return std::string("MOE_ROUTED rows out (i[2] = 1) takes no ready flag: i[0] must be 0");
  if (op.extra == nullptr) return std::string("MOE_ROUTED needs a strata_expert_table in extra");
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor& d = op.dst;
  if (auto e = check_matrix(d, "MOE_ROUTED rows out (i[2] = 1): dst", GgmlType::F32)) return e;
  const int64_t cols = moe_routed_dst_columns(op);
  if (d.ne[0] != table.n_embd || d.ne[1] != cols) {
    return "MOE_ROUTED rows out (i[2] = 1): dst is [" + std::to_string(d.ne[0]) + ", " + std::to_string(d.ne[1]) +
           "], expected [n_embd, k * n_tok] = [" + std::to_string(table.n_embd) + ", " + std::to_string(cols) + "]";
  }
  if ((reinterpret_cast<uintptr_t>(d.data) | d.nb[1]) % sizeof(float) != 0) {
    return std::string("MOE_ROUTED rows out (i[2] = 1): dst rows are not 4-byte aligned");
  }
  return std::nullopt;
}

}  // namespace strata::format
