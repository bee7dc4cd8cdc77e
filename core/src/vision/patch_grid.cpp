#include "patch_grid.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "strata/error.hpp"
#include "vision_math.hpp"

namespace strata::vision::detail {

Grid make_grid(const ProjectorInfo& info, const ProjectorInput& input) {
  const uint32_t align = info.patch_size * info.merge;
  if (input.size.width == 0 || input.size.height == 0 || input.size.width % align != 0 ||
      input.size.height % align != 0) {
    throw Error(info.file + ": the projector's input must be a non-empty multiple of " + std::to_string(align) +
                " pixels each way, got " + std::to_string(input.size.width) + "x" + std::to_string(input.size.height));
  }
  if (input.planes.size() != size_t{3} * input.size.width * input.size.height) {
    throw Error(info.file + ": the projector's input holds " + std::to_string(input.planes.size()) +
                " values, not 3 planes of " + std::to_string(input.size.width) + "x" +
                std::to_string(input.size.height));
  }
  Grid grid;
  grid.gw = input.size.width / info.patch_size;
  grid.gh = input.size.height / info.patch_size;
  const size_t n = static_cast<size_t>(grid.gw) * grid.gh;
  grid.row.resize(n);
  grid.col.resize(n);
  for (uint32_t pr = 0; pr < grid.gh; ++pr) {
    for (uint32_t pc = 0; pc < grid.gw; ++pc) {
      const size_t s = sequence_index(pr, pc, grid.gw);
      grid.row[s] = static_cast<int>(pr);
      grid.col[s] = static_cast<int>(pc);
    }
  }
  return grid;
}

size_t sequence_index(uint32_t pr, uint32_t pc, uint32_t gw) {
  return 4 * (static_cast<size_t>(pr / 2) * (gw / 2) + pc / 2) + 2 * (pr % 2) + (pc % 2);
}

std::vector<float> patch_rows(const ProjectorInput& input, const Grid& grid, uint32_t p, bool f16) {
  const uint32_t img_w = input.size.width;
  const size_t n = grid.patches(), plane = static_cast<size_t>(img_w) * input.size.height;
  const size_t k = size_t{3} * p * p;
  std::vector<float> patches(n * k);
  for (uint32_t pr = 0; pr < grid.gh; ++pr) {
    for (uint32_t pc = 0; pc < grid.gw; ++pc) {
      float* dst = patches.data() + sequence_index(pr, pc, grid.gw) * k;
      for (size_t c = 0; c < 3; ++c) {
        for (uint32_t i = 0; i < p; ++i) {
          const float* src = input.planes.data() + c * plane + (static_cast<size_t>(pr) * p + i) * img_w + pc * p;
          for (uint32_t j = 0; j < p; ++j) *dst++ = f16 ? round_to_f16(src[j]) : src[j];
        }
      }
    }
  }
  return patches;
}

// The position table resized to gw × gh: bilinear with aligned corners, as ggml_interpolate computes it.
std::vector<float> position_grid(const std::vector<float>& table, uint32_t side, uint32_t width, uint32_t gw,
                                 uint32_t gh) {
  if (gw == side && gh == side) return table;
  const auto factor = [side](uint32_t n) {
    return n > 1 && side > 1 ? static_cast<float>(n - 1) / static_cast<float>(side - 1)
                             : static_cast<float>(n) / static_cast<float>(side);
  };
  const float sx = factor(gw), sy = factor(gh);
  const auto last = static_cast<int64_t>(side) - 1;
  std::vector<float> grid(static_cast<size_t>(gw) * gh * width);
  for (uint32_t pr = 0; pr < gh; ++pr) {
    const float y = static_cast<float>(pr) / sy;
    const int64_t y0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(y)), 0, last);
    const int64_t y1 = std::clamp<int64_t>(y0 + 1, 0, last);
    const float dy = std::clamp(y - static_cast<float>(y0), 0.0f, 1.0f);
    for (uint32_t pc = 0; pc < gw; ++pc) {
      const float x = static_cast<float>(pc) / sx;
      const int64_t x0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(x)), 0, last);
      const int64_t x1 = std::clamp<int64_t>(x0 + 1, 0, last);
      const float dx = std::clamp(x - static_cast<float>(x0), 0.0f, 1.0f);
      const float* a = table.data() + static_cast<size_t>(y0 * side + x0) * width;
      const float* b = table.data() + static_cast<size_t>(y0 * side + x1) * width;
      const float* c = table.data() + static_cast<size_t>(y1 * side + x0) * width;
      const float* d = table.data() + static_cast<size_t>(y1 * side + x1) * width;
      float* o = grid.data() + (static_cast<size_t>(pr) * gw + pc) * width;
      for (uint32_t e = 0; e < width; ++e) {
        o[e] = a[e] * (1 - dx) * (1 - dy) + b[e] * dx * (1 - dy) + c[e] * (1 - dx) * dy + d[e] * dx * dy;
      }
    }
  }
  return grid;
}

}  // namespace strata::vision::detail
