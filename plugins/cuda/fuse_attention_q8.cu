// Fusion: ATTENTION and the Q8_1 copy of its output rows that the MUL_MAT reading them next (the o projection)
// would make. The decode path's combine blocks quantize the rows they write (the bytes launch_quantize_q8_1
// writes, into ScratchSlot::ActQ8), and the copy is recorded in ctx.quantized(), so the MUL_MAT skips its quantize
// launch. Only the ATTENTION runs here; the MUL_MAT runs next as it is.
#include "act_quant.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {

size_t fuse_attention_q8(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const strata_op& att = ops[i];
  if (att.kind != STRATA_OP_ATTENTION || i + 1 >= n || check_attention(att)) return 0;
  const strata_tensor& y = att.dst;
  if (!quantized_next(ops[i + 1], y) || !attention_writes_q8(ctx, att)) return 0;
  const int64_t nv = y.ne[0], rows = format::row_count(y);
  forget_quantized_writes(ctx, ops + i, 1);
  auto* q8 = static_cast<unsigned char*>(
      ctx.scratch(ScratchSlot::ActQ8, static_cast<uint64_t>(nv / 32) * kQ8Bytes * static_cast<uint64_t>(rows)));
  run_attention(ctx, att, q8);
  ctx.quantized() = {y.data, nv, rows, y.nb[1]};
  return 1;
}

}  // namespace strata::gpu
