// MOE: the experts of a window (strata_moe_op in op.extra); dst [n_embd, n_tok] = per token, the sum of its
// experts' weighted rows in ascending expert id. The rows go to moe.rows when the caller gave it.
#include <cstring>
#include <vector>

#include "moe.hpp"
#include "strata/format/expert_routes.hpp"
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

namespace {

// The experts of `m` into op.dst (per token, its rows summed in ascending expert id); the rows go to m.rows when
// the caller gave it, else to scratch.
void run_grouped(Context& ctx, const strata_moe_op& m, const strata_op& op) {
  const uint32_t n_pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  float* rows = m.rows != nullptr ? m.rows
                                  : ctx.scratch().rows.as<float>(static_cast<size_t>(n_pairs) * m.n_embd + 1);
  compute_expert_rows(ctx, m, rows);
  sum_expert_rows(ctx, m, rows, static_cast<float*>(op.dst.data), static_cast<int64_t>(op.dst.nb[1] / sizeof(float)));
}

}  // namespace

void run_moe(Context& ctx, const strata_op& op) { run_grouped(ctx, *static_cast<const strata_moe_op*>(op.extra), op); }


// MOE_ROUTED: the same experts with the routes in tensors (src1 ids, src2 weights) and every expert in a table
// (extra): grouped on the host exactly as the model's host step groups them, then MOE's path.

Check check_moe_routed(const Context& ctx, const strata_op& op) {
  if (op.extra == nullptr) return std::string("MOE_ROUTED needs a strata_expert_table in extra");
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  if (auto e = check_matrix(op.src[0], "src0 (x)", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(op.src[1], "src1 (ids)", format::GgmlType::I32)) return e;
  if (auto e = check_matrix(op.src[2], "src2 (weights)", format::GgmlType::F32)) return e;
  if (auto e = check_matrix(op.dst, "dst", format::GgmlType::F32)) return e;
  const int64_t n_tok = op.src[0].ne[1];
  if (op.src[0].ne[0] != table.n_embd) return std::string("src0 (x) rows are not the table's n_embd");
  if (op.src[1].ne[1] != n_tok || op.src[2].ne[0] != op.src[1].ne[0] || op.src[2].ne[1] != n_tok) {
    return std::string("src1 (ids) and src2 (weights) are not both [k, n_tok]");
  }
  if (op.dst.ne[0] != table.n_embd || op.dst.ne[1] != n_tok) return std::string("dst shape is not [n_embd, n_tok]");
  if (table.n_expert == 0 || table.experts == nullptr) return std::string("the expert table is empty");
  // The kernels' checks, on one expert of the table's types.
  const uint32_t id = 0, offsets[2] = {0, 0};
  const strata_moe_op probe{table.n_embd, table.n_ff, static_cast<uint32_t>(n_tok), 1, &id, table.experts,
                            offsets, offsets, nullptr, static_cast<const float*>(op.src[0].data), nullptr};
  return check_moe_op(ctx, probe, false);
}

void run_moe_routed(Context& ctx, const strata_op& op) {
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const int64_t n_tok = op.src[0].ne[1];
  const int64_t k = op.src[1].ne[0];
  std::vector<int32_t> ids(static_cast<size_t>(k * n_tok));
  std::vector<float> weights(ids.size());
  for (int64_t t = 0; t < n_tok; ++t) {
    std::memcpy(ids.data() + t * k, row_ptr(op.src[1], t), static_cast<size_t>(k) * sizeof(int32_t));
    std::memcpy(weights.data() + t * k, row_ptr(op.src[2], t), static_cast<size_t>(k) * sizeof(float));
  }
  format::ExpertRoutes routes;
  if (auto why = format::group_routes(ids.data(), weights.data(), static_cast<uint32_t>(k),
                                      static_cast<uint32_t>(n_tok), table.n_expert, routes)) {
    throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "MOE_ROUTED: " + *why);
  }
  std::vector<strata_expert_weights> chosen;
  // x rows are contiguous in the moe op: copy when the tensor's rows are strided.
  std::vector<float> x_rows;
  const float* x = static_cast<const float*>(op.src[0].data);
  if (op.src[0].nb[1] != table.n_embd * sizeof(float)) {
    x_rows.resize(static_cast<size_t>(table.n_embd * n_tok));
    for (int64_t t = 0; t < n_tok; ++t) std::memcpy(x_rows.data() + t * table.n_embd, row_ptr(op.src[0], t), table.n_embd * sizeof(float));
    x = x_rows.data();
  }
  const strata_moe_op m = format::grouped_moe_op(routes, table, static_cast<uint32_t>(n_tok), x, chosen);
  if (auto why = check_moe_op(ctx, m, false)) throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "MOE_ROUTED: " + *why);
  run_grouped(ctx, m, op);
}

}  // namespace strata::cpu
