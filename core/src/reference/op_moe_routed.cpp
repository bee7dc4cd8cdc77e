// MOE_ROUTED: the experts of one layer chosen on the device. `extra` is a strata_expert_table (every expert's
// matrices by id); src0 x f32 [n_embd, n_tok], src1 ids i32 [k, n_tok], src2 weights f32 [k, n_tok]; dst f32
// [n_embd, n_tok]. Defined as MOE over the same choices: the routes grouped by expert (format::group_routes) and
// each token's weighted rows summed in ascending expert id.
// With src3 (precomputed rows, f32 [n_embd, k * n_tok]), a pair whose table entry has a NULL gate takes its
// weighted row from src3's column t * k + j instead of computing it; the sum is the same, in the same order.
// Rows out (i[2] = 1, dst f32 [n_embd, k * n_tok]): nothing is summed; each pair whose entry has a gate writes its
// weighted row (the very row the sum adds) to dst's column t * k + j, and the other columns are left untouched.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "ops.hpp"
#include "strata/format/flag_ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/format/expert_routes.hpp"
#include "strata/format/moe_routed_modes.hpp"

namespace strata::reference {
namespace {

// Each token's k rows, computed or copied from src3, summed in ascending expert id (stable by j for equal ids):
// the order MOE sums the grouped routes in.
void sum_with_precomputed(const strata_op& op, const strata_expert_table& table, const std::vector<int32_t>& ids,
                          const std::vector<float>& weights, int64_t k, int64_t n_tok) {
  const strata_tensor& x = op.src[0];
  const strata_tensor& pre = op.src[3];
  const size_t n_embd = table.n_embd;
  std::vector<float> row(n_embd), out(n_embd);
  std::vector<int64_t> order(static_cast<size_t>(k));
  for (int64_t t = 0; t < n_tok; ++t) {
    const int32_t* tid = ids.data() + t * k;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return tid[a] < tid[b]; });
    const std::vector<float> xt = read_row(x, t);
    for (size_t q = 0; q < order.size(); ++q) {
      const int64_t j = order[q];
      const strata_expert_weights& w = table.experts[tid[j]];
      if (w.gate == nullptr) {
        row = read_row(pre, t * k + j);
      } else {
        format::ExpertMatrices e{static_cast<GgmlType>(w.gate_type), static_cast<GgmlType>(w.up_type),
                                 static_cast<GgmlType>(w.down_type), w.gate, w.up, w.down,
                                 table.n_embd, table.n_ff};
        format::bind_expert_form(e, table.form, static_cast<uint32_t>(tid[j]));
        format::canonical_expert_row(e, xt.data(), weights[static_cast<size_t>(t * k + j)], row.data());
      }
      for (size_t d = 0; d < n_embd; ++d) out[d] = q == 0 ? row[d] : out[d] + row[d];
    }
    write_row(op.dst, out.data(), t);
  }
}

// Rows out: the weighted row of each pair whose table entry has a gate, into dst's column t * k + j.
void write_rows_out(const strata_op& op, const strata_expert_table& table, const std::vector<int32_t>& ids,
                    const std::vector<float>& weights, int64_t k, int64_t n_tok) {
  std::vector<float> row(table.n_embd);
  for (int64_t t = 0; t < n_tok; ++t) {
    const std::vector<float> xt = read_row(op.src[0], t);
    for (int64_t j = 0; j < k; ++j) {
      const size_t p = static_cast<size_t>(t * k + j);
      const strata_expert_weights& w = table.experts[ids[p]];
      if (w.gate == nullptr) continue;  // computed by another op
      format::ExpertMatrices e{static_cast<GgmlType>(w.gate_type), static_cast<GgmlType>(w.up_type),
                               static_cast<GgmlType>(w.down_type), w.gate, w.up, w.down,
                               table.n_embd, table.n_ff};
      format::bind_expert_form(e, table.form, static_cast<uint32_t>(ids[p]));
      format::canonical_expert_row(e, xt.data(), weights[p], row.data());
      write_row(op.dst, row.data(), static_cast<int64_t>(p));
    }
  }
}

}  // namespace

void moe_routed(const strata_op& op) {
  const char* name = "MOE_ROUTED";
  if (op.extra == nullptr) throw Error("MOE_ROUTED: extra must point at a strata_expert_table");
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor& x = op.src[0];
  const strata_tensor& ids = op.src[1];
  const strata_tensor& weights = op.src[2];
  require_type(name, "src0 (x)", x, GgmlType::F32);
  require_type(name, "src1 (ids)", ids, GgmlType::I32);
  require_type(name, "src2 (weights)", weights, GgmlType::F32);
  require_type(name, "dst", op.dst, GgmlType::F32);
  const int64_t n_tok = x.ne[1];
  const int64_t k = ids.ne[0];
  require(x.ne[0] == table.n_embd, name, "src0 (x)", x, "rows of the table's n_embd " + std::to_string(table.n_embd));
  require(ids.ne[1] == n_tok && k >= 1, name, "src1 (ids)", ids, "[k, n_tok] with n_tok " + std::to_string(n_tok));
  require(weights.ne[0] == k && weights.ne[1] == n_tok, name, "src2 (weights)", weights, "the shape of src1");
  if (auto why = format::check_rows_out(op)) throw Error(*why);
  if (!format::rows_out(op)) {
    require(op.dst.ne[0] == table.n_embd && op.dst.ne[1] == n_tok, name, "dst", op.dst, "the shape of src0");
  }
  if (table.n_expert > 0 && table.experts == nullptr) throw Error("MOE_ROUTED: the expert table has no entries");
  if (auto why = format::check_expert_form(table.form)) throw Error("MOE_ROUTED: " + *why);
  for (uint32_t e = 0; e < table.n_expert; ++e) {
    const strata_expert_weights& w = table.experts[e];
    if (w.gate_type != table.gate_type || w.up_type != table.up_type || w.down_type != table.down_type) {
      throw Error("MOE_ROUTED: expert " + std::to_string(e) + "'s types differ from the table's");
    }
  }
  require_data(name, "src0 (x)", x);
  require_data(name, "src1 (ids)", ids);
  require_data(name, "src2 (weights)", weights);
  std::vector<int32_t> id_rows(static_cast<size_t>(k * n_tok));
  std::vector<float> weight_rows(id_rows.size());
  std::vector<float> x_rows;
  x_rows.reserve(static_cast<size_t>(table.n_embd * n_tok));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      id_rows[static_cast<size_t>(t * k + j)] = read_i32(ids, j, t);
      weight_rows[static_cast<size_t>(t * k + j)] = read_row(weights, t)[static_cast<size_t>(j)];
    }
    const std::vector<float> row = read_row(x, t);
    x_rows.insert(x_rows.end(), row.begin(), row.end());
  }
  format::ExpertRoutes routes;
  if (auto why = format::group_routes(id_rows.data(), weight_rows.data(), static_cast<uint32_t>(k),
                                      static_cast<uint32_t>(n_tok), table.n_expert, routes)) {
    throw Error("MOE_ROUTED: " + *why);
  }
  if (auto why = format::check_precomputed_ready(op)) throw Error("MOE_ROUTED: " + *why);
  if (format::rows_out(op)) {
    write_rows_out(op, table, id_rows, weight_rows, k, n_tok);
    return;
  }
  const strata_tensor& pre = op.src[3];
  if (pre.data != nullptr) {
    require_type(name, "src3 (precomputed rows)", pre, GgmlType::F32);
    require(pre.ne[0] == table.n_embd && pre.ne[1] == k * n_tok && pre.ne[2] == 1 && pre.ne[3] == 1, name,
            "src3 (precomputed rows)", pre, "[n_embd, k * n_tok] = [" + std::to_string(table.n_embd) + ", " +
            std::to_string(k * n_tok) + "]");
    // src3 may still be being written: read it once its ready flag is up.
    if (const int32_t* ready = format::precomputed_ready(op)) {
      if (int64_t* stamp = format::ready_stamp(op)) *stamp = format::host_clock_ns();
      if (!format::wait_for_flag(ready, 1, format::wait_limit_ms(op))) {
        throw Error("MOE_ROUTED: src3's ready flag stayed down for " + std::to_string(format::wait_limit_ms(op)) +
                    " ms: its writer is gone");
      }
    }
    sum_with_precomputed(op, table, id_rows, weight_rows, k, n_tok);
    return;
  }
  for (uint32_t e : routes.expert_ids) {
    if (table.experts[e].gate == nullptr) {
      throw Error("MOE_ROUTED: expert " + std::to_string(e) +
                  " is routed but its table entry has no gate matrix (NULL), and there is no src3 with "
                  "precomputed rows; pass src3 or give the entry its matrices");
    }
  }
  std::vector<strata_expert_weights> chosen;
  const strata_moe_op m = format::grouped_moe_op(routes, table, static_cast<uint32_t>(n_tok), x_rows.data(), chosen);
  strata_op grouped = op;
  grouped.kind = STRATA_OP_MOE;
  grouped.extra = &m;
  moe(grouped);
}

}  // namespace strata::reference
