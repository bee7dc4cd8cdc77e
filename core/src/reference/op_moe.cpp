// MOE: the experts of one layer for one window. `extra` is a strata_moe_op; dst f32 [n_embd, n_tok].
// For every listed expert (expert_ids strictly ascending) and every (token, weight) pair routed to it, the pair's
// weighted row is canonical_expert_row (docs/CANONICAL_ARITHMETIC.md section 3) of the token's row of moe.x, with
// the expert's part of moe.form (biases, activation; backend 1.6) when it is set; it is
// written to moe.rows (when not NULL) at the pair's index. Column t of dst is the sum of token t's rows in
// ascending expert id: the first row, then + the next, ... (zeros for a token routed to no listed expert).
#include <cstring>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {
namespace {

format::GgmlType weight_type(uint32_t id, const char* which, uint32_t expert) {
  const auto tr = format::type_traits(id);
  if (!tr) {
    throw Error("MOE: expert " + std::to_string(expert) + " " + which + " has type id " + std::to_string(id) +
                ", not a ggml type");
  }
  return tr->type;
}

}  // namespace

void moe(const strata_op& op) {
  const char* name = "MOE";
  if (op.extra == nullptr) throw Error("MOE: extra must point at a strata_moe_op");
  const auto& m = *static_cast<const strata_moe_op*>(op.extra);
  const strata_tensor& dst = op.dst;
  require_type(name, "dst", dst, GgmlType::F32);
  require(dst.ne[0] == m.n_embd && dst.ne[1] == m.n_tok, name, "dst", dst,
          "[" + std::to_string(m.n_embd) + ", " + std::to_string(m.n_tok) + "] (the moe op's n_embd, n_tok)");
  if (m.n_experts > 0 && (m.expert_ids == nullptr || m.weights == nullptr || m.token_offsets == nullptr ||
                          m.token_index == nullptr || m.route_weight == nullptr || m.x == nullptr)) {
    throw Error("MOE: expert_ids, weights, token_offsets, token_index, route_weight and x must all be set");
  }
  if (auto why = format::check_expert_form(m.form)) throw Error("MOE: " + *why);
  const size_t n_embd = m.n_embd;
  std::vector<float> sum(n_embd * m.n_tok, 0.0f);
  std::vector<bool> seen(m.n_tok, false);
  std::vector<float> row(n_embd);
  for (uint32_t i = 0; i < m.n_experts; ++i) {
    if (i > 0 && m.expert_ids[i] <= m.expert_ids[i - 1]) {
      throw Error("MOE: expert_ids must be strictly ascending; entry " + std::to_string(i) + " is " +
                  std::to_string(m.expert_ids[i]) + " after " + std::to_string(m.expert_ids[i - 1]));
    }
    const strata_expert_weights& w = m.weights[i];
    format::ExpertMatrices e{weight_type(w.gate_type, "gate", m.expert_ids[i]),
                             weight_type(w.up_type, "up", m.expert_ids[i]),
                             weight_type(w.down_type, "down", m.expert_ids[i]),
                             w.gate, w.up, w.down, m.n_embd, m.n_ff};
    format::bind_expert_form(e, m.form, m.expert_ids[i]);
    if (m.token_offsets[i] > m.token_offsets[i + 1]) {
      throw Error("MOE: token_offsets must not decrease (entry " + std::to_string(i) + ")");
    }
    for (uint32_t pair = m.token_offsets[i]; pair < m.token_offsets[i + 1]; ++pair) {
      const uint32_t t = m.token_index[pair];
      if (t >= m.n_tok) {
        throw Error("MOE: pair " + std::to_string(pair) + " names token " + std::to_string(t) + " of a window of " +
                    std::to_string(m.n_tok));
      }
      format::canonical_expert_row(e, m.x + t * n_embd, m.route_weight[pair], row.data());
      if (m.rows != nullptr) std::memcpy(m.rows + pair * n_embd, row.data(), n_embd * sizeof(float));
      float* out = sum.data() + t * n_embd;
      for (size_t d = 0; d < n_embd; ++d) out[d] = seen[t] ? out[d] + row[d] : row[d];
      seen[t] = true;
    }
  }
  for (uint32_t t = 0; t < m.n_tok; ++t) write_row(dst, sum.data() + static_cast<size_t>(t) * n_embd, t);
}

}  // namespace strata::reference
