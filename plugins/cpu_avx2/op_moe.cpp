// MOE: the experts of a window (strata_moe_op in op.extra); dst [n_embd, n_tok] = per token, the sum of its
// experts' weighted rows in ascending expert id. The rows go to moe.rows when the caller gave it.
#include "moe.hpp"
#include "ops.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

Check check_moe(const Context& ctx, const strata_op& op) {
  if (op.extra == nullptr) return std::string("MOE needs a strata_moe_op in extra");
  const auto& m = *static_cast<const strata_moe_op*>(op.extra);
  if (auto e = check_matrix(op.dst, "dst", format::GgmlType::F32)) return e;
  if (op.dst.ne[0] != m.n_embd || op.dst.ne[1] != m.n_tok) return std::string("dst shape is not [n_embd, n_tok]");
  if (op.dst.nb[1] % sizeof(float) != 0) return std::string("dst rows are not float-aligned");
  return check_moe_op(ctx, m, false);
}

void run_moe(Context& ctx, const strata_op& op) {
  const auto& m = *static_cast<const strata_moe_op*>(op.extra);
  const uint32_t n_pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  float* rows = m.rows != nullptr ? m.rows
                                  : ctx.scratch().rows.as<float>(static_cast<size_t>(n_pairs) * m.n_embd + 1);
  compute_expert_rows(ctx, m, rows);
  sum_expert_rows(ctx, m, rows, static_cast<float*>(op.dst.data), static_cast<int64_t>(op.dst.nb[1] / sizeof(float)));
}

}  // namespace strata::cpu
