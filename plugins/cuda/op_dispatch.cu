// Which op runs where: check_op and run_op dispatch on strata_op_kind.
#include "fusion_match.hpp"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {

Check check_op(const strata_op& op) {
  switch (op.kind) {
    case STRATA_OP_GET_ROWS: return check_get_rows(op);
    case STRATA_OP_RMS_NORM: return check_rms_norm(op);
    case STRATA_OP_MUL_MAT: return check_mul_mat(op);
    case STRATA_OP_ADD:
    case STRATA_OP_MUL: return check_binary(op);
    case STRATA_OP_SWIGLU: return check_swiglu(op);
    case STRATA_OP_ROPE: return check_rope(op);
    case STRATA_OP_KV_STORE: return check_kv_store(op);
    case STRATA_OP_ATTENTION: return check_attention(op);
    case STRATA_OP_ROUTER: return check_router(op);
    case STRATA_OP_MOE: return check_moe(op);
    case STRATA_OP_SOFTMAX: return check_softmax(op);
    case STRATA_OP_MOE_ROUTED: return check_moe_routed(op);
    case STRATA_OP_TIMESTAMP: return check_timestamp(op);
    case STRATA_OP_COPY: return check_copy(op);
    case STRATA_OP_SIGNAL: return check_signal(op);
    case STRATA_OP_WAIT: return check_wait(op);
    case STRATA_OP_LAYER_NORM: return check_layer_norm(op);
    case STRATA_OP_GELU: return check_gelu(op);
  }
  return "unknown op kind " + std::to_string(op.kind);
}

Check check_op(const strata_op& op, const Options& options) {
  if (Check why = check_op(op)) return why;
  if (op.kind == STRATA_OP_ATTENTION && options.canonical_double) return check_attention_f64ref(op);
  return std::nullopt;
}

Check check_strided_rows(const strata_tensor& t, const char* what, format::GgmlType type) {
  if (!format::is_type(t, type)) return std::string(what) + " is " + format::type_name(t.type) + ", expected " + std::string(format::traits(type).name);
  if (t.data == nullptr) return std::string(what) + " has no data";
  for (int d = 0; d < 4; ++d) {
    if (t.ne[d] < 1) return std::string(what) + " has ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]);
  }
  const uint64_t e = format::traits(type).block_bytes;
  if (t.nb[0] != e) return std::string(what) + " is not contiguous in dimension 0";
  if (t.ne[3] != 1) return std::string(what) + " has a fourth dimension";
  if (reinterpret_cast<uintptr_t>(t.data) % e != 0 || t.nb[1] % e != 0 || t.nb[2] % e != 0) {
    return std::string(what) + " data or strides are misaligned";
  }
  return std::nullopt;
}

namespace {

// Does `dst` meet the rows the cached Q8_1 copy was made from? Any overlap, not only the same start: views write
// slices of wider rows (deepseek2's ROPE into the last 64 of each 576-wide column). A type without traits counts as
// meeting them.
bool writes_quantized(const QuantizedActivation& q, const strata_tensor& dst) {
  if (q.src == nullptr || dst.data == nullptr) return false;
  if (!format::type_traits(dst.type)) return true;
  const auto lo = reinterpret_cast<uintptr_t>(q.src);
  const uintptr_t hi = lo + static_cast<uintptr_t>(q.n_tok - 1) * q.row_stride + static_cast<uintptr_t>(q.n_in) * sizeof(float);
  const ByteSpan d = byte_span(dst);
  return d.lo != d.hi && d.lo < hi && lo < d.hi;
}

}  // namespace

void run_op(Context& ctx, const strata_op& op) {
  // An op writing the rows MUL_MAT quantized last makes that copy stale.
  if (writes_quantized(ctx.quantized(), op.dst)) ctx.quantized() = {};
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

void forget_quantized_writes(Context& ctx, const strata_op* ops, size_t count) {
  for (size_t j = 0; j < count; ++j) {
    if (writes_quantized(ctx.quantized(), ops[j].dst)) ctx.quantized() = {};
  }
}

bool quantized_next(const strata_op& mm, const strata_tensor& y) {
  const strata_tensor& s = mm.src[1];
  return mm.kind == STRATA_OP_MUL_MAT && s.data == y.data && s.ne[0] == y.ne[0] && s.ne[1] == format::row_count(y) &&
         s.ne[2] == 1 && s.ne[3] == 1 && s.nb[1] == y.nb[1] && y.ne[0] % 32 == 0 && !check_mul_mat(mm);
}

size_t run_ops_at(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  if (ctx.options().fuse) {
    for (FusionFn f : fusions()) {
      if (const size_t used = f(ctx, ops, i, n)) return used;
    }
  }
  run_op(ctx, ops[i]);
  return 1;
}

}  // namespace strata::gpu
