// MOE: the experts of a window (strata_moe_op in op.extra); dst [n_embd, n_tok] = per token, the sum of its
// experts' weighted rows in ascending expert id. The rows go to moe.rows when the caller gave it.
#include <cstring>
#include <string>
#include <vector>

#include "moe.hpp"
#include "strata/format/expert_routes.hpp"
#include "ops.hpp"
#include "strata/format/flag_ops.hpp"
#include "strata/format/moe_routed_modes.hpp"
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
// (extra): grouped on the host exactly as the model's host step groups them, then MOE's path. With src3, entries
// with a NULL gate are precomputed: their pairs' rows come from src3 (plugin_api.h). With rows out (i[2] = 1) the
// pairs of entries with a gate are computed the same way and each row goes to dst's column t * k + j unsummed.
// Any window takes src3 and rows out.

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
  if (auto e = format::check_rows_out(op)) return e;
  if (!format::rows_out(op) && (op.dst.ne[0] != table.n_embd || op.dst.ne[1] != n_tok)) {
    return std::string("dst shape is not [n_embd, n_tok]");
  }
  if (table.n_expert == 0 || table.experts == nullptr) return std::string("the expert table is empty");
  const strata_tensor& pre = op.src[3];
  if (pre.data != nullptr) {
    if (auto e = check_matrix(pre, "src3 (precomputed rows)", format::GgmlType::F32)) return e;
    if (pre.ne[0] != table.n_embd || pre.ne[1] != op.src[1].ne[0] * n_tok) {
      return "src3 (precomputed rows) is [" + std::to_string(pre.ne[0]) + ", " + std::to_string(pre.ne[1]) +
             "], expected [n_embd, k * n_tok] = [" + std::to_string(table.n_embd) + ", " +
             std::to_string(op.src[1].ne[0] * n_tok) + "]";
    }
    if (pre.nb[1] % sizeof(float) != 0) return std::string("src3 (precomputed rows) rows are not float-aligned");
  }
  if (auto e = format::check_precomputed_ready(op)) return e;
  // The kernels' checks, on an expert of the table's types. Its matrices are never read (the probe has no pairs),
  // and any entry may lack them (a precomputed expert), so the probe points them at the table itself.
  const uint32_t id = 0, offsets[2] = {0, 0};
  const strata_expert_weights types{table.experts, table.experts, table.experts, table.gate_type, table.up_type,
                                    table.down_type, 0};
  const strata_moe_op probe{table.n_embd, table.n_ff, static_cast<uint32_t>(n_tok), 1, &id, &types,
                            offsets, offsets, nullptr, static_cast<const float*>(op.src[0].data), nullptr,
                            table.form};
  return check_moe_op(ctx, probe, false);
}

namespace {

// The pairs of `m` whose expert entry has a gate matrix (the ones an op computes), as routes of their own in the
// same order; full_pair[s] is computed pair s's index in `m`, ascending.
struct ComputedPairs {
  format::ExpertRoutes routes;
  std::vector<uint32_t> full_pair;
};

ComputedPairs computed_pairs(const strata_moe_op& m) {
  ComputedPairs c;
  c.routes.token_offsets.assign(1, 0);
  for (uint32_t i = 0; i < m.n_experts; ++i) {
    if (m.weights[i].gate == nullptr) continue;
    c.routes.expert_ids.push_back(m.expert_ids[i]);
    for (uint32_t p = m.token_offsets[i]; p < m.token_offsets[i + 1]; ++p) {
      c.routes.token_index.push_back(m.token_index[p]);
      c.routes.route_weight.push_back(m.route_weight[p]);
      c.full_pair.push_back(p);
    }
    c.routes.token_offsets.push_back(static_cast<uint32_t>(c.full_pair.size()));
  }
  return c;
}

// The computed pairs' weighted rows, contiguous in their order, into `rows` (room for all of them).
void compute_pairs(Context& ctx, const ComputedPairs& c, const strata_expert_table& table, const strata_moe_op& m,
                   float* rows) {
  std::vector<strata_expert_weights> chosen;
  const strata_moe_op cm = format::grouped_moe_op(c.routes, table, m.n_tok, m.x, chosen);
  if (auto why = check_moe_op(ctx, cm, false)) throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "MOE_ROUTED: " + *why);
  compute_expert_rows(ctx, cm, rows);
}

// MOE_ROUTED with rows out: the computed pairs' rows, each to dst's column t * k + j; nothing is summed.
void run_rows_out(Context& ctx, const strata_op& op, const strata_moe_op& m, const format::ExpertRoutes& routes,
                  const strata_expert_table& table) {
  const ComputedPairs c = computed_pairs(m);
  const size_t n_embd = m.n_embd;
  float* rows = ctx.scratch().rows.as<float>(c.full_pair.size() * n_embd + 1);
  compute_pairs(ctx, c, table, m, rows);
  for (size_t s = 0; s < c.full_pair.size(); ++s) {
    std::memcpy(row_ptr(op.dst, routes.route_index[c.full_pair[s]]), rows + s * n_embd, n_embd * sizeof(float));
  }
}

// MOE_ROUTED with src3: the pairs whose expert entry has a NULL gate take src3's column t * k + j; the others are
// computed (one MOE op over those experts only). Then every token's rows are summed as without src3.
void run_with_precomputed(Context& ctx, const strata_op& op, const strata_moe_op& m, const format::ExpertRoutes& routes,
                          const strata_expert_table& table) {
  const uint32_t n_pairs = m.n_experts > 0 ? m.token_offsets[m.n_experts] : 0;
  const size_t n_embd = m.n_embd;
  const ComputedPairs computed = computed_pairs(m);
  const std::vector<uint32_t>& full_pair = computed.full_pair;
  float* rows = ctx.scratch().rows.as<float>(static_cast<size_t>(n_pairs) * n_embd + 1);
  compute_pairs(ctx, computed, table, m, rows);
  // Computed pair s moves to its place full_pair[s] >= s; from the last one down, no row is overwritten unread.
  for (size_t s = full_pair.size(); s-- > 0;) {
    std::memmove(rows + full_pair[s] * n_embd, rows + s * n_embd, n_embd * sizeof(float));
  }
  // src3 may still be being written (its ready flag): the computed rows above overlapped with that.
  if (const int32_t* ready = format::precomputed_ready(op)) {
    if (int64_t* stamp = format::ready_stamp(op)) *stamp = format::host_clock_ns();
    if (!format::wait_for_flag(ready, 1, format::wait_limit_ms(op))) {
      throw OpFailure(STRATA_ERR_UNAVAILABLE, "MOE_ROUTED: src3's ready flag stayed down for " +
                                                  std::to_string(format::wait_limit_ms(op)) + " ms: its writer is gone");
    }
  }
  for (uint32_t i = 0; i < m.n_experts; ++i) {
    if (m.weights[i].gate != nullptr) continue;
    for (uint32_t p = m.token_offsets[i]; p < m.token_offsets[i + 1]; ++p) {
      std::memcpy(rows + p * n_embd, row_ptr(op.src[3], routes.route_index[p]), n_embd * sizeof(float));
    }
  }
  sum_expert_rows(ctx, m, rows, static_cast<float*>(op.dst.data), static_cast<int64_t>(op.dst.nb[1] / sizeof(float)));
}

}  // namespace

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
  if (format::rows_out(op)) {
    run_rows_out(ctx, op, m, routes, table);
    return;
  }
  if (op.src[3].data != nullptr) {
    run_with_precomputed(ctx, op, m, routes, table);
    return;
  }
  if (auto why = check_moe_op(ctx, m, false)) throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "MOE_ROUTED: " + *why);
  run_grouped(ctx, m, op);
}

}  // namespace strata::cpu
