// A Qwen3-VL projector's weights as projector_file.cpp reads them: matrices view the mapped file, the small
// vectors (biases, norms) and the patch kernels and position table are decoded to float.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "strata/gguf.hpp"
#include "strata/vision.hpp"

namespace strata::vision {

// A weight of GGUF shape [cols, rows]: `rows` rows of `cols` values of `type`, applied as y = W x.
struct Matrix {
  format::GgmlType type = format::GgmlType::F32;
  const uint8_t* data = nullptr;
  uint32_t rows = 0;  // outputs
  uint32_t cols = 0;  // inputs
  uint64_t row_bytes = 0;
};

struct Linear {
  Matrix w;
  std::vector<float> b;
};

struct Norm {
  std::vector<float> w;
  std::vector<float> b;
};

struct VisionBlock {
  Norm ln1;
  Linear qkv;  // rows: q (width), k (width), v (width)
  Linear out;
  Norm ln2;
  Linear up;
  Linear down;
};

// An MLP over merged patches: norm (deepstack: over the merged vector), fc1, GELU, fc2.
struct Merger {
  std::optional<Norm> norm;
  Linear fc1;
  Linear fc2;
};

struct ProjectorWeights {
  explicit ProjectorWeights(gguf::File f) : file(std::move(f)) {}

  gguf::File file;
  ProjectorInfo info;
  std::vector<float> patch_kernel[2];  // [width][3][patch][patch] each: the Conv3d's two temporal slices
  std::vector<float> patch_bias;       // [width]
  std::vector<float> pos_table;        // [pos_side²][width], row r·pos_side + c
  std::optional<Norm> pre_ln;
  std::vector<VisionBlock> blocks;
  std::vector<Merger> deepstack;       // one per info.deepstack_blocks entry, in block order
  std::optional<Norm> post_ln;         // applied per patch before the main merger
  Merger main;                         // mm.0, mm.2 (no norm of its own)
};

}  // namespace strata::vision
