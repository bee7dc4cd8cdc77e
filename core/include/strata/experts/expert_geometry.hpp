// The routed experts' shape as the cache sees it: per layer, how many experts and how many bytes one expert's
// matrices take (gate + up + down, or the fused gate_up + down, plus any per-expert biases).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/experts/expert_key.hpp"

namespace strata {
struct ModelWeights;
}

namespace strata::experts {

struct LayerExperts {
  uint32_t n_expert = 0;      // 0: the layer has no routed experts (a dense layer)
  uint64_t expert_bytes = 0;  // one expert's bytes in the file's types
};

struct ExpertGeometry {
  std::vector<LayerExperts> layers;  // one per model layer

  uint32_t n_layer() const { return static_cast<uint32_t>(layers.size()); }
  // The widest layer's expert count: the width of the key space.
  uint32_t max_experts() const;
  KeySpace key_space() const { return {n_layer(), max_experts()}; }
  // Every routed expert's bytes, all layers.
  uint64_t routed_bytes() const;
  bool has(ExpertKey k) const { return k.layer < layers.size() && k.expert < layers[k.layer].n_expert; }
};

// The geometry of a loaded model's routed experts, from the stacked tensors' own sizes (the bytes of the stack
// divided by its expert count), so mixed quantizations (q4_K_M's q6_K down on some layers) come out per layer.
ExpertGeometry expert_geometry(const ModelWeights& weights);

}  // namespace strata::experts
