// The encoder's geometry, shared by the CPU encoder (encoder.cpp) and the one on a backend (encoder_backend.cpp):
// patches in 2x2-block order (a merged token's four patches are consecutive rows), their rows and columns, the
// patch matrix the embedding multiplies, and the position table resized to the grid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "projector_weights.hpp"

namespace strata::vision::detail {

struct Grid {
  uint32_t gw = 0, gh = 0;   // patches across and down
  std::vector<int> row, col;  // per sequence index
  size_t patches() const { return row.size(); }
};

// The input's grid; throws strata::Error for an input that is not a multiple of patch x merge each way or whose
// planes do not match its size.
Grid make_grid(const ProjectorInfo& info, const ProjectorInput& input);

// Patch (pr, pc)'s index in 2x2-block order: blocks in raster order, (0,0), (0,1), (1,0), (1,1) inside.
size_t sequence_index(uint32_t pr, uint32_t pc, uint32_t gw);

// n rows of 3 x patch x patch values (channel, row, column), rows in sequence order; `f16` rounds each to f16 (the
// patch embedding's F16 inputs in llama.cpp).
std::vector<float> patch_rows(const ProjectorInput& input, const Grid& grid, uint32_t patch, bool f16);

// The position table resized to gw x gh (bilinear, aligned corners, as ggml_interpolate), rows in raster order.
std::vector<float> position_grid(const std::vector<float>& table, uint32_t side, uint32_t width, uint32_t gw,
                                 uint32_t gh);

}  // namespace strata::vision::detail
