// MOE_ROUTED's two outputs (plugin_api.h): per-token sums (i[2] = 0: dst [n_embd, n_tok]) or rows out (backend
// 1.4, i[2] = 1: dst [n_embd, k * n_tok], one weighted row per computed pair in column t * k + j, nothing summed).
// The checks of rows out are shared by the reference and every plugin, so their messages are the same. They read
// only descriptors, never `data`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/plugin_api.h"

namespace strata::format {

// Whether op, a MOE_ROUTED, writes rows out (i[2] = 1) instead of each token's sum.
inline bool rows_out(const strata_op& op) { return op.kind == STRATA_OP_MOE_ROUTED && op.i[2] == 1; }

// The columns MOE_ROUTED's dst must have: k * n_tok with rows out, n_tok otherwise (k = src1.ne[0], n_tok =
// src0.ne[1]).
int64_t moe_routed_dst_columns(const strata_op& op);

// Why op's i[2] is malformed (not 0 or 1), or, with rows out, why the op cannot take it: src3 present, i[0] != 0,
// dst not an f32 matrix [n_embd, k * n_tok] with 4-byte aligned rows (n_embd: the strata_expert_table in extra).
// nullopt when well formed; the summing mode's dst is left to the caller's own checks.
std::optional<std::string> check_rows_out(const strata_op& op);

}  // namespace strata::format
