// The experts of one MoE window (strata_moe_op), expert-grouped, with the canonical arithmetic of
// docs/CANONICAL_ARITHMETIC.md section 3: for each listed expert and its tokens, gate/up (+ the form's biases) ->
// SwiGLU or SwiGLU-OAI (exp_c; moe.form) -> Q8_1 requantization -> down (+ bias) -> weighted row. Shared by the MOE op (which then sums each token's rows in
// ascending expert id) and the expert pool (which hands back the rows unsummed).
#pragma once

#include <optional>
#include <string>

#include "context.hpp"

namespace strata::cpu {

// Why `moe` cannot be computed (bad shapes, unsorted experts, out-of-range tokens, types without a kernel), or
// nullopt when it can. `need_rows`: the caller requires moe.rows (the expert pool).
std::optional<std::string> check_moe_op(const Context& ctx, const strata_moe_op& moe, bool need_rows);

// Writes one weighted row of n_embd floats per (expert, token) pair to rows (pair order: as token_offsets lists
// them). Call only after check_moe_op passed.
void compute_expert_rows(Context& ctx, const strata_moe_op& moe, float* rows);

// dst row t (stride dst_stride floats) = the sum of token t's weighted rows in ascending expert id (zeros for a
// token no expert took).
void sum_expert_rows(Context& ctx, const strata_moe_op& moe, const float* rows, float* dst, int64_t dst_stride);

}  // namespace strata::cpu
