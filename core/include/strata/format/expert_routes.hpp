// Grouping a window's routes by expert: the router's (token, expert, weight) choices, k per token, become the
// expert-major lists of the MOE op (experts ascending, each expert's tokens in window order). This fixes which
// expert rows a token sums and in what order (docs/CANONICAL_ARITHMETIC.md section 3), so the model's host step,
// the reference's MOE_ROUTED and the CPU plugin's MOE_ROUTED all share it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/plugin_api.h"

namespace strata::format {

struct ExpertRoutes {
  std::vector<uint32_t> expert_ids;     // distinct experts chosen, ascending
  std::vector<uint32_t> token_offsets;  // [expert_ids.size() + 1] into the two below
  std::vector<uint32_t> token_index;    // the window row of each (expert, token) pair
  std::vector<float> route_weight;      // the router's weight of each pair
  std::vector<uint32_t> route_index;    // which of the router's choices each pair is: t * k + j
};

// ids and weights are [k, n_tok] (token-major: token t's choices at t*k .. t*k+k-1). Returns why not when an id is
// outside [0, n_expert), else fills `out` (reusing its storage).
std::optional<std::string> group_routes(const int32_t* ids, const float* weights, uint32_t k, uint32_t n_tok,
                                        uint32_t n_expert, ExpertRoutes& out);

// The MOE op over grouped routes whose experts come from `table` (host memory), reading the window's rows x
// [n_embd, n_tok] (contiguous). `chosen` receives the chosen experts' entries; the op points into it and into
// `routes`, so both must outlive it. This is how MOE_ROUTED is defined in terms of MOE.
strata_moe_op grouped_moe_op(const ExpertRoutes& routes, const strata_expert_table& table, uint32_t n_tok,
                             const float* x, std::vector<strata_expert_weights>& chosen);

}  // namespace strata::format
