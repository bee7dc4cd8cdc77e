// The list of fusions run_ops_at tries at each op, in order. Each is defined next to the kernels it launches; a
// fusion must give exactly the bytes of its ops run one by one, intermediate buffers included (tests/gpu's
// FusionsAndGraphsChangeNoBits compares whole windows and decode steps with fuse=false).
//   fuse_head_prep:     [RMS_NORM] ROPE of q, of k, then KV_STOREs (of k and v), per (head, token) in one kernel.
//   fuse_add_norm:      ADD then RMS_NORM of its sum, per row; and with any RMS_NORM read next by a MUL_MAT, the
//                       normed rows' Q8_1 copy that MUL_MAT (and MOE_ROUTED) would make.
//   fuse_mul_mat_router: the router's MUL_MAT (float weights, up to 4 tokens) and the ROUTER of its logits, the
//                       last block of the product routing.
//   fuse_mul_mat_group: consecutive MUL_MATs of up to eight tokens over one src1 (q, k, v) as one launch.
//   fuse_attention_q8:  ATTENTION read next by a MUL_MAT (the o projection): its output rows' Q8_1 copy written
//                       by the attention kernel, so the MUL_MAT skips its quantize launch.
//   fuse_swiglu_q8:     the same for SWIGLU read next by a MUL_MAT (a shared expert's down product).
//   fuse_moe_add:       MOE_ROUTED on its decode path and the in-place ADD of another row to its sums (a shared
//                       expert's output), added as the down kernel stores each sum.
#include "mul_mat_group.cuh"
#include "ops.hpp"

namespace strata::gpu {

const std::vector<FusionFn>& fusions() {
  static const std::vector<FusionFn> list = {fuse_head_prep,     fuse_add_norm,     fuse_mul_mat_router,
                                             fuse_mul_mat_group, fuse_attention_q8, fuse_swiglu_q8,
                                             fuse_moe_add};
  return list;
}

}  // namespace strata::gpu
