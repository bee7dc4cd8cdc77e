// The backend's ops on the GPU. Each has a check (nullopt when the plugin runs the op as described, else why not;
// it reads only descriptors, never device memory) and a run that enqueues the op's kernels on the context's stream
// (called only after its check passed). Semantics: plugin_api.h and core's reference backend
// (core/src/reference/); MUL_MAT, MOE, MOE_ROUTED, GET_ROWS, SWIGLU follow docs/CANONICAL_ARITHMETIC.md bit for bit.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "context.hpp"
#include "strata/format/types.hpp"

namespace strata::gpu {

using Check = std::optional<std::string>;

// An op that cannot run (a launch failed, scratch cannot grow during capture): becomes a status at the boundary.
struct OpFailure : std::runtime_error {
  strata_status_code code;
  OpFailure(strata_status_code c, const std::string& message) : std::runtime_error(message), code(c) {}
};

// Throws OpFailure naming `what` when the last launch or call failed.
void check_launch(const char* what);
void check_cuda(cudaError_t err, const char* what);

Check check_op(const strata_op& op);
// The checks that depend on the instance's options (canonical_double's kernels compute fewer forms): check_op(op)
// and then those; what enqueue and supports_op ask.
Check check_op(const strata_op& op, const Options& options);

// Why `t` is not a view of `type` elements (4 bytes: f32 or i32) with dimension 0 contiguous and rows and planes
// at any aligned strides nb[1], nb[2] (dimension 3 of size 1), for kernels that address every row by both strides.
Check check_strided_rows(const strata_tensor& t, const char* what, format::GgmlType type);
void run_op(Context& ctx, const strata_op& op);
// Runs ops[i] and maybe the ops after it as one fused launch (a pattern of fusions.cu); returns how many ops ran
// (at least 1). Fusions only ever replace ops by kernels that give the same bytes as running them one by one.
size_t run_ops_at(Context& ctx, const strata_op* ops, size_t i, size_t n);

// A fusion: the number of ops starting at ops[i] it ran (0 when its pattern does not start there, having
// enqueued nothing). A fusion keeps ctx.quantized() true: it calls forget_quantized_writes for the ops it runs
// before it may record a Q8_1 copy of its own (ScratchSlot::ActQ8) for the MUL_MAT after it.
using FusionFn = size_t (*)(Context& ctx, const strata_op* ops, size_t i, size_t n);
// The fusions, tried in order at each op (fusions.cu).
const std::vector<FusionFn>& fusions();
// Forgets the cached Q8_1 copy when one of the `count` ops writes the rows it was made from.
void forget_quantized_writes(Context& ctx, const strata_op* ops, size_t count);
// Does `mm` (a MUL_MAT) read the rows `y` as its src1, all of them as they are, with rows of whole Q8_1 blocks?
// Then the op writing y may leave y's Q8_1 copy in ctx.quantized() for it.
bool quantized_next(const strata_op& mm, const strata_tensor& y);

// The fusions (fuse_head_prep.cu, fuse_add_norm.cu, fuse_router.cu, fuse_attention_q8.cu, op_elementwise.cu,
// moe_decode.cu).
size_t fuse_head_prep(Context& ctx, const strata_op* ops, size_t i, size_t n);
size_t fuse_add_norm(Context& ctx, const strata_op* ops, size_t i, size_t n);
size_t fuse_mul_mat_router(Context& ctx, const strata_op* ops, size_t i, size_t n);
size_t fuse_attention_q8(Context& ctx, const strata_op* ops, size_t i, size_t n);
size_t fuse_swiglu_q8(Context& ctx, const strata_op* ops, size_t i, size_t n);
size_t fuse_moe_add(Context& ctx, const strata_op* ops, size_t i, size_t n);

Check check_mul_mat(const strata_op& op);
void run_mul_mat(Context& ctx, const strata_op& op);
Check check_moe(const strata_op& op);            // MOE (pairs planned on the host)
void run_moe(Context& ctx, const strata_op& op);
Check check_moe_routed(const strata_op& op);     // MOE_ROUTED (routes read on the device)
void run_moe_routed(Context& ctx, const strata_op& op);
Check check_get_rows(const strata_op& op);
void run_get_rows(Context& ctx, const strata_op& op);
Check check_rms_norm(const strata_op& op);
void run_rms_norm(Context& ctx, const strata_op& op);
Check check_binary(const strata_op& op);  // ADD, MUL
void run_binary(Context& ctx, const strata_op& op);
Check check_swiglu(const strata_op& op);
void run_swiglu(Context& ctx, const strata_op& op);
Check check_gelu(const strata_op& op);  // 1.7 (op_elementwise.cu)
void run_gelu(Context& ctx, const strata_op& op);
Check check_layer_norm(const strata_op& op);  // 1.7
void run_layer_norm(Context& ctx, const strata_op& op);
Check check_rope(const strata_op& op);
void run_rope(Context& ctx, const strata_op& op);
Check check_kv_store(const strata_op& op);
void run_kv_store(Context& ctx, const strata_op& op);
Check check_attention(const strata_op& op);
// What canonical_double's `_f64ref` attention kernels refuse beyond check_attention (heads above 256, value heads
// of their own size).
Check check_attention_f64ref(const strata_op& op);
void run_attention(Context& ctx, const strata_op& op);
// Whether ATTENTION's path for these shapes can also write its output rows' Q8_1 copy; run_attention with `q8`
// (only then) writes it there as launch_quantize_q8_1 would.
bool attention_writes_q8(const Context& ctx, const strata_op& op);
void run_attention(Context& ctx, const strata_op& op, unsigned char* q8);
Check check_router(const strata_op& op);
void run_router(Context& ctx, const strata_op& op);
Check check_softmax(const strata_op& op);
void run_softmax(Context& ctx, const strata_op& op);
Check check_timestamp(const strata_op& op);
void run_timestamp(Context& ctx, const strata_op& op);
Check check_copy(const strata_op& op);  // COPY, SIGNAL, WAIT: op_flags.cu
void run_copy(Context& ctx, const strata_op& op);
Check check_signal(const strata_op& op);
void run_signal(Context& ctx, const strata_op& op);
Check check_wait(const strata_op& op);
void run_wait(Context& ctx, const strata_op& op);

}  // namespace strata::gpu
