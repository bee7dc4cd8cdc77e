// The Qwen3-VL vision encoder (../shared/data/vision/README.md, steps 4 to 10): patch embedding with the two
// temporal kernels, the interpolated position table, the 2×2 patch order, the vision blocks, the deepstack
// mergers after their blocks and the main merger. Patches are kept in 2×2-block order from the embedding on, so a
// merged token's four patches are consecutive rows.
#include <algorithm>
#include <cmath>

#include "patch_grid.hpp"
#include "projector_weights.hpp"
#include "vision_attention.hpp"
#include "vision_math.hpp"

namespace strata::vision {
namespace {

using detail::gelu;
using detail::layer_norm;
using detail::Grid;
using detail::linear;

Matrix float_matrix(const std::vector<float>& values, uint32_t rows, uint32_t cols) {
  return Matrix{format::GgmlType::F32, reinterpret_cast<const uint8_t*>(values.data()), rows, cols,
                uint64_t{cols} * sizeof(float)};
}

// Patch embedding plus positions, rows in sequence order.
std::vector<float> embed_patches(const ProjectorWeights& w, const ProjectorInput& input, const Grid& grid,
                                 const EncodeOptions& options) {
  const ProjectorInfo& info = w.info;
  const uint32_t width = info.width;
  const size_t n = grid.patches(), k = size_t{3} * info.patch_size * info.patch_size;
  const auto in = [&](float v) { return options.f16_patch_input ? detail::round_to_f16(v) : v; };
  const std::vector<float> patches = detail::patch_rows(input, grid, info.patch_size, options.f16_patch_input);
  std::vector<float> e[2];
  for (int t = 0; t < 2; ++t) {
    std::vector<float> kernel = w.patch_kernel[t];
    for (float& v : kernel) v = in(v);
    e[t].resize(n * width);
    linear(patches.data(), n, float_matrix(kernel, width, static_cast<uint32_t>(k)), {}, e[t].data(), options.threads);
  }
  const std::vector<float> pos = detail::position_grid(w.pos_table, info.pos_side, width, grid.gw, grid.gh);
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
  const Grid grid = detail::make_grid(info, input);
  const size_t n = grid.patches(), n_tokens = n / 4;

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
