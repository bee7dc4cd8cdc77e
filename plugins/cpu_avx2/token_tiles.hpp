// Sixteen tokens' quantized activations laid out for the AVX-512 products whose vector lanes are tokens
// (quant_tiles.hpp). The one-token kernels reduce each span's 32 products across lanes, a transpose of shuffles per
// span and token; with the tokens in the lanes a span's eight vpdpbusd leave each token's exact span sum in its own
// lane, so many tokens (prefill, an expert's tokens in a window) need no reduction at all.
//
// Per span of 32 values: eight 64-byte registers, register k holding bytes 4k..4k+3 of each token's span as
// q + 128 (u8: vpdpbusd's unsigned operand), token t in dword lane t; then per span 16 floats each of the tokens'
// scale da and sums qlo_f, qhi_f, qsum_f (quant_act.hpp). Lanes of tokens that do not exist hold q = 0 and zeros.
#pragma once

#include <cstddef>
#include <cstdint>

#include "aligned_buffer.hpp"
#include "quant_act.hpp"

namespace strata::cpu {

constexpr int kTileTokens = 16;

// How many of n_tok tokens a product takes in tiles (the first ones; the rest take the one-token driver): whole
// tiles, and a last partial one of 12 or more. Measured on this project's development VM (docs/PERFORMANCE.md,
// 2026-12-07 late night): at 64 tokens the tiles read 2-2.5x faster than the eight-token chunks on one core; at
// 16 about as fast to 1.35x; at 12 (four lanes idle) as fast for Q6_K, Q8_0 and IQ4_XS and slower for Q4_K.
inline int tiled_tokens(int n_tok) {
  const int whole = n_tok / kTileTokens * kTileTokens;
  return n_tok - whole >= 12 ? n_tok : whole;
}

struct TokenTile {
  const uint8_t* xt;     // spans x 8 registers x 64 bytes
  const float* da;       // spans x 16
  const float* qlo_f;    // spans x 16
  const float* qhi_f;    // spans x 16
  const float* qsum_f;   // spans x 16
  int n_tok;             // tokens that exist (1..16): lanes 0..n_tok-1
};

// Bytes one tile of rows of n values (a multiple of 32) takes, a multiple of 64.
size_t tile_bytes(int64_t n);

// One tile of tokens acts[0..count) (count 1..16), its storage at mem (tile_bytes(n) bytes, 64-byte aligned).
TokenTile make_tile(const QuantRow* acts, int count, int64_t n, void* mem);
inline int tile_count(int n_tok) { return (n_tok + kTileTokens - 1) / kTileTokens; }

}  // namespace strata::cpu
