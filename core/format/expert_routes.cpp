#include "strata/format/expert_routes.hpp"

namespace strata::format {

std::optional<std::string> group_routes(const int32_t* ids, const float* weights, uint32_t k, uint32_t n_tok,
                                        uint32_t n_expert, ExpertRoutes& out) {
  const size_t n_pairs = size_t{k} * n_tok;
  std::vector<uint32_t> count(n_expert, 0);
  for (size_t i = 0; i < n_pairs; ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= n_expert) {
      return "token " + std::to_string(i / k) + " chose expert " + std::to_string(ids[i]) + " of " +
             std::to_string(n_expert);
    }
    ++count[static_cast<uint32_t>(ids[i])];
  }
  out.expert_ids.clear();
  out.token_offsets.assign(1, 0);
  std::vector<uint32_t> cursor(n_expert, 0);
  for (uint32_t e = 0; e < n_expert; ++e) {
    if (count[e] == 0) continue;
    cursor[e] = out.token_offsets.back();
    out.expert_ids.push_back(e);
    out.token_offsets.push_back(out.token_offsets.back() + count[e]);
  }
  // Each expert's range filled in window order: a running cursor per expert.
  out.token_index.assign(n_pairs, 0);
  out.route_weight.assign(n_pairs, 0.0f);
  out.route_index.assign(n_pairs, 0);
  for (uint32_t t = 0; t < n_tok; ++t) {
    for (uint32_t j = 0; j < k; ++j) {
      const auto e = static_cast<uint32_t>(ids[size_t{t} * k + j]);
      const uint32_t pair = cursor[e]++;
      out.token_index[pair] = t;
      out.route_weight[pair] = weights[size_t{t} * k + j];
      out.route_index[pair] = t * k + j;
    }
  }
  return std::nullopt;
}

strata_moe_op grouped_moe_op(const ExpertRoutes& routes, const strata_expert_table& table, uint32_t n_tok,
                             const float* x, std::vector<strata_expert_weights>& chosen) {
  chosen.clear();
  for (uint32_t e : routes.expert_ids) chosen.push_back(table.experts[e]);
  return strata_moe_op{table.n_embd,
                       table.n_ff,
                       n_tok,
                       static_cast<uint32_t>(routes.expert_ids.size()),
                       routes.expert_ids.data(),
                       chosen.data(),
                       routes.token_offsets.data(),
                       routes.token_index.data(),
                       routes.route_weight.data(),
                       x,
                       nullptr,
                       table.form};
}

}  // namespace strata::format
