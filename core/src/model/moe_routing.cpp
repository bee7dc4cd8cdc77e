// From the ROUTER op's output to the MOE op: the routes grouped by expert (format::group_routes: experts ascending,
// each expert's tokens in window order), with the experts' matrices as views of the mapped stacks.
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"

namespace strata {

void build_moe_op(uint32_t il, const ExpertStack& experts, uint32_t k, const GraphContext& ctx) {
  Activations& a = ctx.act;
  const uint32_t n_tok = static_cast<uint32_t>(ctx.n_tok);
  if (auto why = format::group_routes(a.expert_ids.data(), a.expert_weights.data(), k, n_tok, ctx.hp.n_expert,
                                      a.moe_routes)) {
    throw Error("router: " + *why);
  }
  a.moe_weights.clear();
  for (uint32_t e : a.moe_routes.expert_ids) a.moe_weights.push_back(experts.expert(e));
  if (!a.route_counts.empty()) {
    const size_t row = size_t{il} * ctx.hp.n_expert;
    for (size_t i = 0; i < a.moe_routes.expert_ids.size(); ++i) {
      a.route_counts[row + a.moe_routes.expert_ids[i]] += a.moe_routes.token_offsets[i + 1] - a.moe_routes.token_offsets[i];
    }
  }
  a.moe = strata_moe_op{ctx.hp.n_embd,
                        experts.n_ff,
                        n_tok,
                        static_cast<uint32_t>(a.moe_routes.expert_ids.size()),
                        a.moe_routes.expert_ids.data(),
                        a.moe_weights.data(),
                        a.moe_routes.token_offsets.data(),
                        a.moe_routes.token_index.data(),
                        a.moe_routes.route_weight.data(),
                        a.xn.data(),
                        nullptr,
                        experts.form()};
}

void build_shared_moe_op(const SharedExperts& shared, const GraphContext& ctx) {
  Activations& a = ctx.act;
  const auto n_tok = static_cast<uint32_t>(ctx.n_tok);
  a.shared_rows.resize(n_tok);
  for (uint32_t t = 0; t < n_tok; ++t) a.shared_rows[t] = t;
  a.shared_offsets = {0, n_tok};
  a.shared_expert_id = 0;
  a.shared_expert = strata_expert_weights{shared.gate->data,
                                          shared.up->data,
                                          shared.down->data,
                                          static_cast<uint32_t>(shared.gate->type),
                                          static_cast<uint32_t>(shared.up->type),
                                          static_cast<uint32_t>(shared.down->type),
                                          0};
  a.moe_shared = strata_moe_op{ctx.hp.n_embd,
                               static_cast<uint32_t>(shared.gate->ne[1]),
                               n_tok,
                               1,
                               &a.shared_expert_id,
                               &a.shared_expert,
                               a.shared_offsets.data(),
                               a.shared_rows.data(),
                               a.shared_weights.data(),
                               a.xn.data(),
                               nullptr,
                               nullptr};
}

}  // namespace strata
