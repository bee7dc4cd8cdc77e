// The backend's ops. Each has a check (nullopt when the plugin runs the op as described, else why not) and a run
// (called only after its check passed). Semantics: plugin_api.h and core's reference backend.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "context.hpp"
#include "pieces.hpp"

namespace strata::cpu {

using Check = std::optional<std::string>;

// An op that cannot finish (an index out of range in the data): becomes a status at the boundary.
struct OpFailure : std::runtime_error {
  strata_status_code code;
  OpFailure(strata_status_code c, const std::string& message) : std::runtime_error(message), code(c) {}
};

// Runs fn(begin, end) over items [0, n): on the calling thread when n * cost (roughly, floats touched) is too
// small to pay for a dispatch, otherwise in pieces claimed by the pool's participants. Each item is computed by
// one thread.
template <class Fn>
void for_items(Context& ctx, int64_t n, int64_t cost, Fn fn) {
  constexpr int64_t kInline = 1 << 15;
  if (n <= 0) return;
  if (n == 1 || n * cost < kInline || ctx.pool().parts() == 1) {
    fn(int64_t{0}, n);
    return;
  }
  const Pieces pieces = cut(n, static_cast<uint64_t>(cost) * sizeof(float), ctx.pool().parts());
  ctx.pool().run(pieces.count(), [&](uint32_t piece, unsigned) {
    const Range r = pieces.range(piece);
    fn(r.begin, r.end);
  });
}

Check check_op(const Context& ctx, const strata_op& op);
void run_op(Context& ctx, const strata_op& op);

Check check_mul_mat(const Context& ctx, const strata_op& op);
void run_mul_mat(Context& ctx, const strata_op& op);
Check check_moe(const Context& ctx, const strata_op& op);
void run_moe(Context& ctx, const strata_op& op);
Check check_moe_routed(const Context& ctx, const strata_op& op);
void run_moe_routed(Context& ctx, const strata_op& op);
Check check_get_rows(const strata_op& op);
void run_get_rows(Context& ctx, const strata_op& op);
Check check_rms_norm(const strata_op& op);
void run_rms_norm(Context& ctx, const strata_op& op);
Check check_binary(const strata_op& op);  // ADD, MUL
void run_binary(Context& ctx, const strata_op& op);
Check check_swiglu(const strata_op& op);
void run_swiglu(Context& ctx, const strata_op& op);
Check check_rope(const strata_op& op);
void run_rope(Context& ctx, const strata_op& op);
Check check_kv_store(const strata_op& op);
void run_kv_store(Context& ctx, const strata_op& op);
Check check_attention(const strata_op& op);
void run_attention(Context& ctx, const strata_op& op);
Check check_router(const strata_op& op);
void run_router(Context& ctx, const strata_op& op);
Check check_softmax(const strata_op& op);
void run_softmax(Context& ctx, const strata_op& op);
Check check_timestamp(const strata_op& op);
void run_timestamp(Context& ctx, const strata_op& op);
Check check_copy(const strata_op& op);  // COPY, SIGNAL, WAIT: op_flags.cpp
void run_copy(Context& ctx, const strata_op& op);
Check check_signal(const strata_op& op);
void run_signal(Context& ctx, const strata_op& op);
Check check_wait(const strata_op& op);
void run_wait(Context& ctx, const strata_op& op);
Check check_layer_norm(const strata_op& op);  // backend 1.7: op_norm.cpp
void run_layer_norm(Context& ctx, const strata_op& op);
Check check_gelu(const strata_op& op);  // backend 1.7: op_elementwise.cpp
void run_gelu(Context& ctx, const strata_op& op);

}  // namespace strata::cpu
