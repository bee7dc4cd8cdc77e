// The tiled product of a quantized weight matrix with many Q8_1 columns (mma_tile.cuh's arithmetic): for MUL_MAT
// the columns are a window's tokens; for experts, the (token, expert) pairs of one expert per tile, the expert and
// its pairs read on the device.
#pragma once

#include <cstdint>

#include "context.hpp"

namespace strata::gpu {

// Up to kTileCols pairs of one expert: pairs[begin .. begin + count) of the job's pair list.
struct ExpertTile {
  uint32_t expert, begin, count, unused;
};

struct TiledJob {
  const uint8_t* w;                      // the weight matrix (unless `tiles` is set): rows of n_spans * 32 values
  uint64_t w_stride;                     // bytes per weight row
  int rows;                              // output rows
  int n_spans;                           // 32-value spans per row
  const unsigned char* act;              // Q8_1 rows of n_spans blocks
  float* out;                            // column c's values at out + out_row(c) * out_stride + row
  int64_t out_stride;
  int n_cols;                            // without tiles: the columns are 0 .. n_cols - 1 (act row = out row = c)
  const ExpertTile* tiles;               // with tiles: tile y covers pairs of tiles[y].expert (y < *n_tiles)
  const uint32_t* n_tiles;
  const strata_expert_weights* experts;  // [n_expert] the matrices
  int which;                             // 0 gate, 1 up, 2 down
  const uint32_t* pairs;                 // pair ids grouped by expert
  int act_div;                           // a pair's activation row is pair / act_div; its out row the pair
  const float* pair_weight;              // when set: out = pair_weight[pair] * dot
};

// Whether `type` has a tiled kernel on this device (int8 MMAs need sm_80; none in the HIP build).
bool has_tiled_kernel(uint32_t type, const Context& ctx);

// Enqueues the job on a grid of row tiles x `col_tiles` column tiles (tiles past *n_tiles return at once).
void launch_tiled(const TiledJob& job, uint32_t type, unsigned col_tiles, cudaStream_t stream);

}  // namespace strata::gpu
