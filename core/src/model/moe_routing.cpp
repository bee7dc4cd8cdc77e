// From the ROUTER op's output to the MOE op: group the (token, expert, weight) choices by expert, experts in
// ascending id and each expert's tokens in window order (CSR offsets), with the experts' matrices as views of
// the mapped stacks.
#include <string>

#include "graph.hpp"
#include "strata/error.hpp"

namespace strata {

void build_moe_op(const ExpertStack& experts, uint32_t k, const GraphContext& ctx) {
  Activations& a = ctx.act;
  const uint32_t n_tok = static_cast<uint32_t>(ctx.n_tok);
  const uint32_t n_expert = ctx.hp.n_expert;
  std::vector<uint32_t> count(n_expert, 0);
  for (uint32_t i = 0; i < k * n_tok; ++i) {
    const int32_t e = a.expert_ids[i];
    if (e < 0 || static_cast<uint32_t>(e) >= n_expert) {
      throw Error("router chose expert " + std::to_string(e) + " of " + std::to_string(n_expert));
    }
    ++count[static_cast<uint32_t>(e)];
  }
  a.moe_expert_ids.clear();
  a.moe_weights.clear();
  a.moe_token_offsets.assign(1, 0);
  for (uint32_t e = 0; e < n_expert; ++e) {
    if (count[e] == 0) continue;
    a.moe_expert_ids.push_back(e);
    a.moe_weights.push_back(experts.expert(e));
    a.moe_token_offsets.push_back(a.moe_token_offsets.back() + count[e]);
  }
  // Fill each expert's range in window order: a running cursor per expert.
  a.moe_token_index.assign(k * n_tok, 0);
  a.moe_route_weight.assign(k * n_tok, 0.0f);
  std::vector<uint32_t> cursor(n_expert, 0);
  for (size_t i = 0; i < a.moe_expert_ids.size(); ++i) cursor[a.moe_expert_ids[i]] = a.moe_token_offsets[i];
  for (uint32_t t = 0; t < n_tok; ++t) {
    for (uint32_t j = 0; j < k; ++j) {
      const auto e = static_cast<uint32_t>(a.expert_ids[t * k + j]);
      const uint32_t pair = cursor[e]++;
      a.moe_token_index[pair] = t;
      a.moe_route_weight[pair] = a.expert_weights[t * k + j];
    }
  }
  a.moe = strata_moe_op{ctx.hp.n_embd,
                        experts.n_ff,
                        n_tok,
                        static_cast<uint32_t>(a.moe_expert_ids.size()),
                        a.moe_expert_ids.data(),
                        a.moe_weights.data(),
                        a.moe_token_offsets.data(),
                        a.moe_token_index.data(),
                        a.moe_route_weight.data(),
                        a.xn.data(),
                        nullptr};
}

}  // namespace strata
