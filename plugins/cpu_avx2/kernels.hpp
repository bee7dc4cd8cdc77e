// The matrix-vector kernels: one per weight type and ISA path, each computing rows x tokens dot products with
// the canonical arithmetic (docs/CANONICAL_ARITHMETIC.md sections 2 and 4). Both paths give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "isa.hpp"
#include "quant_act.hpp"
#include "token_tiles.hpp"

namespace strata::cpu {

// out[t * out_stride + r] = dot(weight row r, activation row t) for r < rows, t < n_tok.
// w: row r starts at w + r * w_stride; n: values per row (a whole number of the type's blocks, and of 32).
using QuantMatVec = void (*)(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n, const QuantRow* acts,
                             int n_tok, float* out, int64_t out_stride);
// The same for F32/F16/BF16 weights against float activations (x[t] points at row t's n floats).
using FloatMatVec = void (*)(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n, const float* const* x,
                             int n_tok, float* out, int64_t out_stride);

// The same products over tokens in tiles of 16 (token_tiles.hpp): out[(16 i + t) * out_stride + r] for token t of
// tiles[i]. AVX-512 only; the same bits as QuantMatVec's for every token.
using QuantTiles = void (*)(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n, const TokenTile* tiles,
                            int n_tiles, float* out, int64_t out_stride);

constexpr int kMaxTypeId = 40;

struct KernelTable {
  QuantMatVec quant[kMaxTypeId] = {};
  FloatMatVec floating[kMaxTypeId] = {};
  QuantTiles tiles[kMaxTypeId] = {};
};

// The table of a path (filled once). gathers: whether AVX-512 kernels may use gather instructions (gathers_fast);
// without them the types that gather take their per-span decoders instead, with the same bits.
const KernelTable& kernel_table(IsaPath path, bool gathers = true);

// A product whose first `tiled` tokens are in tiles (tile_count(tiled) of them) and the rest in acts[tiled..n_tok):
// the tiles kernel, then the one-token driver for the left-over tokens.
inline void run_tiled(QuantTiles tiles_kernel, QuantMatVec kernel, const unsigned char* w, size_t w_stride,
                      int64_t rows, int64_t n, const TokenTile* tiles, int tiled, const QuantRow* acts, int n_tok,
                      float* out, int64_t out_stride) {
  tiles_kernel(w, w_stride, rows, n, tiles, tile_count(tiled), out, out_stride);
  if (tiled < n_tok) kernel(w, w_stride, rows, n, acts + tiled, n_tok - tiled, out + tiled * out_stride, out_stride);
}

// Each family file fills its types into both tables.
void add_legacy_kernels(KernelTable& avx2, KernelTable& avx512);
void add_kquant_kernels(KernelTable& avx2, KernelTable& avx512);
void add_iquant_kernels(KernelTable& avx2, KernelTable& avx512);
void add_ternary_kernels(KernelTable& avx2, KernelTable& avx512);
void add_float_kernels(KernelTable& avx2, KernelTable& avx512);
// Replaces, in a copy of the AVX-512 table, the kernels that gather with their gather-free forms.
void add_gather_free_kernels(KernelTable& avx512);

}  // namespace strata::cpu
