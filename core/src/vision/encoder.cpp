// The Qwen3-VL vision encoder (../shared/data/vision/README.md, steps 4 to 10): patch embedding with the two
// temporal kernels, the interpolated position table, the 2×2 patch order, the vision blocks, the deepstack
// mergers after their blocks and the main merger. Patches are kept in 2×2-block order from the embedding on, so a
// merged token's four patches are consecutive rows.
#include <algorithm>
#include <cmath>

#include "projector_weights.hpp"
#include "vision_attention.hpp"
#include "vision_math.hpp"

namespace strata::vision {
namespace {

using detail::gelu;
using detail::layer_norm;
using detail::linear;

struct Grid {
  uint32_t gw = 0, gh = 0;   // patches
  std::vector<int> row, col;  // per sequence index
};

// Patch (pr, pc)'s index in 2×2-block order: blocks in raster order, (0,0), (0,1), (1,0), (1,1) inside.
size_t sequence_index(uint32_t pr, uint32_t pc, uint32_t gw) {
  return 4 * (static_cast<size_t>(pr / 2) * (gw / 2) + pc / 2) + 2 * (pr % 2) + (pc % 2);
}

Matrix float_matrix(const std::vector<float>& values, uint32_t rows, uint32_t cols) {
  return Matrix{format::GgmlType::F32, reinterpret_cast<const uint8_t*>(values.data()), rows, cols,
                uint64_t{cols} * sizeof(float)};
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

// Patch embedding plus positions, rows in sequence order.
std::vector<float> embed_patches(const ProjectorWeights& w, const ProjectorInput& input, const Grid& grid,
                                 const EncodeOptions& options) {
  const ProjectorInfo& info = w.info;
  const uint32_t p = info.patch_size, width = info.width, img_w = input.size.width;
  const size_t n = static_cast<size_t>(grid.gw) * grid.gh, plane = static_cast<size_t>(img_w) * input.size.height;
  const size_t k = size_t{3} * p * p;
  const auto in = [&](float v) { return options.f16_patch_input ? detail::round_to_f16(v) : v; };

  std::vector<float> patches(n * k);
  for (uint32_t pr = 0; pr < grid.gh; ++pr) {
    for (uint32_t pc = 0; pc < grid.gw; ++pc) {
      float* dst = patches.data() + sequence_index(pr, pc, grid.gw) * k;
      for (size_t c = 0; c < 3; ++c) {
        for (uint32_t i = 0; i < p; ++i) {
          const float* src = input.planes.data() + c * plane + (static_cast<size_t>(pr) * p + i) * img_w + pc * p;
          for (uint32_t j = 0; j < p; ++j) *dst++ = in(src[j]);
        }
      }
    }
  }
  std::vector<float> e[2];
  for (int t = 0; t < 2; ++t) {
    std::vector<float> kernel = w.patch_kernel[t];
    for (float& v : kernel) v = in(v);
    e[t].resize(n * width);
    linear(patches.data(), n, float_matrix(kernel, width, static_cast<uint32_t>(k)), {}, e[t].data(), options.threads);
  }
  const std::vector<float> pos = position_grid(w.pos_table, info.pos_side, width, grid.gw, grid.gh);
  std::vector<float> h(n * width);
  for (size_t s = 0; s < n; ++s) {
    const float* pr = pos.data() + (static_cast<size_t>(grid.row[s]) * grid.gw + static_cast<size_t>(grid.col[s])) * width;
    for (uint32_t o = 0; o < width; ++o) {
      const size_t i = s * width + o;
      h[i] = ((e[0][i] + e[1][i]) + w.patch_bias[o]) + pr[o];
    }
  }
  return h;
}

// One pre-norm vision block over h (n rows of width), in place.
void vision_block(const ProjectorWeights& w, const VisionBlock& b, const Grid& grid, std::vector<float>& h,
                  const EncodeOptions& options) {
  const ProjectorInfo& info = w.info;
  const size_t n = grid.row.size(), width = info.width;
  std::vector<float> x(n * width), qkv(n * 3 * width), attn(n * width), y(n * width);
  layer_norm(h.data(), n, width, b.ln1, info.eps, x.data());
  linear(x.data(), n, b.qkv.w, b.qkv.b, qkv.data(), options.threads);
  detail::vision_attention(qkv.data(), n, info.n_head, info.head_dim, grid.row, grid.col, attn.data(),
                           options.threads);
  linear(attn.data(), n, b.out.w, b.out.b, y.data(), options.threads);
  for (size_t i = 0; i < h.size(); ++i) h[i] = y[i] + h[i];

  layer_norm(h.data(), n, width, b.ln2, info.eps, x.data());
  std::vector<float> up(n * info.ffn_width);
  linear(x.data(), n, b.up.w, b.up.b, up.data(), options.threads);
  for (float& v : up) v = info.gelu ? gelu(v, options.f16_gelu_table) : detail::quick_gelu(v);
  linear(up.data(), n, b.down.w, b.down.b, y.data(), options.threads);
  for (size_t i = 0; i < h.size(); ++i) h[i] = h[i] + y[i];
}

// A merger over merged rows (n_tokens rows of 4·width): [norm], fc1, GELU, fc2 → n_tokens rows of out_width.
std::vector<float> merge(const Merger& m, const std::vector<float>& merged, size_t n_tokens, float eps,
                         const EncodeOptions& options) {
  const size_t in_width = m.fc1.w.cols;
  std::vector<float> x;
  const float* src = merged.data();
  if (m.norm) {
    x.resize(merged.size());
    layer_norm(merged.data(), n_tokens, in_width, *m.norm, eps, x.data());
    src = x.data();
  }
  std::vector<float> hidden(n_tokens * m.fc1.w.rows);
  linear(src, n_tokens, m.fc1.w, m.fc1.b, hidden.data(), options.threads);
  for (float& v : hidden) v = gelu(v, options.f16_gelu_table);
  std::vector<float> out(n_tokens * m.fc2.w.rows);
  linear(hidden.data(), n_tokens, m.fc2.w, m.fc2.b, out.data(), options.threads);
  return out;
}

}  // namespace

Embeddings Projector::encode(const Image& image, const EncodeOptions& options) const {
  return encode(preprocess(image), options);
}

Embeddings Projector::encode(const ProjectorInput& input, const EncodeOptions& options) const {
  const ProjectorWeights& w = *weights_;
  const ProjectorInfo& info = w.info;
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
  const size_t n = static_cast<size_t>(grid.gw) * grid.gh, n_tokens = n / 4;
  grid.row.resize(n);
  grid.col.resize(n);
  for (uint32_t pr = 0; pr < grid.gh; ++pr) {
    for (uint32_t pc = 0; pc < grid.gw; ++pc) {
      const size_t s = sequence_index(pr, pc, grid.gw);
      grid.row[s] = static_cast<int>(pr);
      grid.col[s] = static_cast<int>(pc);
    }
  }

  std::vector<float> h = embed_patches(w, input, grid, options);
  if (w.pre_ln) layer_norm(h.data(), n, info.width, *w.pre_ln, info.eps, h.data());
  std::vector<std::vector<float>> deepstack;
  for (uint32_t b = 0; b < info.n_block; ++b) {
    vision_block(w, w.blocks[b], grid, h, options);
    const auto marked = std::find(info.deepstack_blocks.begin(), info.deepstack_blocks.end(), b);
    if (marked != info.deepstack_blocks.end()) {
      const auto m = static_cast<size_t>(marked - info.deepstack_blocks.begin());
      deepstack.push_back(merge(w.deepstack[m], h, n_tokens, info.eps, options));
    }
  }
  if (w.post_ln) layer_norm(h.data(), n, info.width, *w.post_ln, info.eps, h.data());
  const std::vector<float> main = merge(w.main, h, n_tokens, info.eps, options);

  Embeddings out;
  out.part_width = info.out_width;
  out.n_deepstack = static_cast<uint32_t>(deepstack.size());
  out.width = out.part_width * (1 + out.n_deepstack);
  out.nx = grid.gw / 2;
  out.ny = grid.gh / 2;
  out.n_pos = std::max(out.nx, out.ny);
  out.rows.resize(n_tokens * out.width);
  for (size_t t = 0; t < n_tokens; ++t) {
    float* row = out.rows.data() + t * out.width;
    std::copy_n(main.data() + t * out.part_width, out.part_width, row);
    for (size_t m = 0; m < deepstack.size(); ++m) {
      std::copy_n(deepstack[m].data() + t * out.part_width, out.part_width, row + (m + 1) * out.part_width);
    }
  }
  return out;
}

}  // namespace strata::vision
