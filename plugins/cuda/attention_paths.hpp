// ATTENTION's two GPU paths, chosen by op_attention.cu from the shapes (never from the positions, which live on
// the device): split-K for a few tokens, query tiles for many.
#pragma once

#include "attention_common.cuh"
#include "context.hpp"

namespace strata::gpu::attention {

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
