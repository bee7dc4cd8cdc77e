// MOE_ROUTED for a few tokens (decode) in two launches instead of the general pipeline's seven: one kernel for
// Q8_1(x) + gate + up + SwiGLU + Q8_1(h) per (token, k) pair reading the routes directly, and one kernel for down
// that sums each token's weighted rows in ascending expert id.
// The bytes are the pipeline's: the same span partials, accumulation order and SwiGLU/Q8_1 steps per row, the
// same stable ordering of a token's experts, ids outside [0, n_expert) left out.
#pragma once

#include "context.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

// Runs op (a checked MOE_ROUTED) on the decode path and returns true, or returns false without enqueuing anything
// when the op is not one it handles (more than 8 tokens, k above 16, float matrices, gate and up of different
// types, or a type without a decode kernel). Pairs whose expert entry has a NULL gate take their weighted rows
// from src3 (plugin_api.h); without src3 such an entry is the caller's error (the ids are never read on the host).
// With rows out (i[2] = 1) each computed pair's row goes to dst's column t * k + j instead of a sum.
// addend (fuse_moe_add): each token's sums get addend's row t (addend_stride floats apart; 0: one row for all)
// added by the ADD's operation as they are stored.
bool run_moe_routed_decode(Context& ctx, const strata_op& op, const float* addend = nullptr, int64_t addend_stride = 0);

// Whether run_moe_routed_decode takes op (a checked MOE_ROUTED): the only path that waits for src3's ready flag.
bool moe_routed_decode_takes(const strata_op& op);

}  // namespace strata::gpu
