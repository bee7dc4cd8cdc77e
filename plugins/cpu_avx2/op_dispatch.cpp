// Which op runs where: check_op and run_op dispatch on strata_op_kind.
#include "ops.hpp"

namespace strata::cpu {

Check check_op(const Context& ctx, const strata_op& op) {
  switch (op.kind) {
    case STRATA_OP_GET_ROWS: return check_get_rows(op);
    case STRATA_OP_RMS_NORM: return check_rms_norm(op);
    case STRATA_OP_MUL_MAT: return check_mul_mat(ctx, op);
    case STRATA_OP_ADD:
    case STRATA_OP_MUL: return check_binary(op);
    case STRATA_OP_SWIGLU: return check_swiglu(op);
    case STRATA_OP_ROPE: return check_rope(op);
    case STRATA_OP_KV_STORE: return check_kv_store(op);
    case STRATA_OP_ATTENTION: return check_attention(op);
    case STRATA_OP_ROUTER: return check_router(op);
    case STRATA_OP_MOE: return check_moe(ctx, op);
    case STRATA_OP_SOFTMAX: return check_softmax(op);
    case STRATA_OP_MOE_ROUTED: return check_moe_routed(ctx, op);
    case STRATA_OP_TIMESTAMP: return check_timestamp(op);
    case STRATA_OP_COPY: return check_copy(op);
    case STRATA_OP_SIGNAL: return check_signal(op);
    case STRATA_OP_WAIT: return check_wait(op);
    case STRATA_OP_LAYER_NORM: return check_layer_norm(op);
    case STRATA_OP_GELU: return check_gelu(op);
  }
  return "unknown op kind " + std::to_string(op.kind);
}

void run_op(Context& ctx, const strata_op& op) {
  switch (op.kind) {
    case STRATA_OP_GET_ROWS: return run_get_rows(ctx, op);
    case STRATA_OP_RMS_NORM: return run_rms_norm(ctx, op);
    case STRATA_OP_MUL_MAT: return run_mul_mat(ctx, op);
    case STRATA_OP_ADD:
    case STRATA_OP_MUL: return run_binary(ctx, op);
    case STRATA_OP_SWIGLU: return run_swiglu(ctx, op);
    case STRATA_OP_ROPE: return run_rope(ctx, op);
    case STRATA_OP_KV_STORE: return run_kv_store(ctx, op);
    case STRATA_OP_ATTENTION: return run_attention(ctx, op);
    case STRATA_OP_ROUTER: return run_router(ctx, op);
    case STRATA_OP_MOE: return run_moe(ctx, op);
    case STRATA_OP_SOFTMAX: return run_softmax(ctx, op);
    case STRATA_OP_MOE_ROUTED: return run_moe_routed(ctx, op);
    case STRATA_OP_TIMESTAMP: return run_timestamp(ctx, op);
    case STRATA_OP_COPY: return run_copy(ctx, op);
    case STRATA_OP_SIGNAL: return run_signal(ctx, op);
    case STRATA_OP_WAIT: return run_wait(ctx, op);
    case STRATA_OP_LAYER_NORM: return run_layer_norm(ctx, op);
    case STRATA_OP_GELU: return run_gelu(ctx, op);
  }
}

}  // namespace strata::cpu
