// ATTENTION's GPU paths, chosen by op_attention.cu from the shapes (never from the positions, which live on the
// device). The default: float on tensor cores (attention_flash.cu), one definition of every row's output whatever
// the window. With the canonical_double option: the `_f64ref` kernels in double (attention_decode.cu for a few
// tokens, attention_prefill.cu for many), the CPU engine's bits.
#pragma once

#include "attention_common.cuh"
#include "context.hpp"

namespace strata::gpu::attention {

// The float path (attention_flash.cu). Windows of up to this many tokens take the split kernel and its combine;
// longer ones the query tiles. Both compute the same bits: the choice is speed only.
constexpr int kMaxFlashSplitTokens = 8;
// Whether the tensor-core kernels serve these heads and cache on this device (f16 and q8_0 caches, heads up to
// 128, values heads as large as the keys', sm_80 and later); else a portable scalar kernel does (f32 caches are the
// op tests' alone: the engine's KV cache is f16 or q8_0), for key heads up to kRowsMaxKeyDim values and value heads
// up to kRowsMaxValueDim.
bool flash_tensor_cores(const Context& ctx, const Operands& o, Cache cache);
constexpr int kRowsMaxSlots = 8;  // value indices a thread of the rows kernel (64 threads)
constexpr int kRowsMaxValueDim = 64 * kRowsMaxSlots;
constexpr int kRowsMaxKeyDim = 1024;  // q in the rows kernel's shared memory
// Whether a window takes the split kernel.
bool flash_split(const Operands& o);
// Runs the float path; `q8` (nullptr, or the output rows' Q8_1 copy) only where flash_writes_q8.
void run_flash(Context& ctx, const Operands& o, Cache cache, int n_kv_head, unsigned char* q8);
inline bool flash_writes_q8(const Context& ctx, const Operands& o, Cache cache) {
  return flash_tensor_cores(ctx, o, cache) && flash_split(o) && o.head_dim % 32 == 0;
}

// Decode: blocks per (split of the token's positions, q heads of a kv head, token), then a combine per (head,
// token). With `q8`, the combine also writes the output rows' Q8_1 copy (n_tok rows of n_head * head_dim / 32
// blocks, as launch_quantize_q8_1 writes them); only where decode_quantizes(o).
void run_decode(Context& ctx, const Operands& o, Cache cache, unsigned char* q8 = nullptr);
// Whether run_decode can write the Q8_1 copy: its blocks' heads cover whole Q8_1 blocks.
bool decode_quantizes(const Operands& o);

// Prefill: blocks per (tile of the (token, q head) rows of a kv head, kv head), each loading every key and value
// tile once for all its rows.
void run_prefill(Context& ctx, const Operands& o, Cache cache, int n_kv_head);
// How many blocks run_prefill would launch: it pays off only when they fill a good part of the GPU.
int64_t prefill_blocks(int64_t n_tok, int64_t group, int64_t head_dim, int64_t n_kv_head);
// Whether the device gives a block the prefill kernel's shared memory (about 70 to 115 KB; AMD's 64 KB does not).
bool prefill_fits(const Context& ctx, int64_t head_dim);

}  // namespace strata::gpu::attention
