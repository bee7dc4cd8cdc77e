#include "strata/experts/expert_geometry.hpp"

#include <algorithm>
#include <string>

#include "strata/error.hpp"
#include "strata/model.hpp"

namespace strata::experts {

uint32_t ExpertGeometry::max_experts() const {
  uint32_t n = 0;
  for (const LayerExperts& l : layers) n = std::max(n, l.n_expert);
  return n;
}

uint64_t ExpertGeometry::routed_bytes() const {
  uint64_t total = 0;
  for (const LayerExperts& l : layers) total += uint64_t{l.n_expert} * l.expert_bytes;
  return total;
}

namespace {

// One expert's share of a stacked tensor [.., .., n_expert] (biases: [.., n_expert]).
uint64_t per_expert(Tensor t, uint32_t n_expert, uint32_t layer) {
  if (t == nullptr) return 0;
  const uint64_t stacked = t->ne[t->n_dims - 1];
  if (stacked != n_expert || t->n_bytes % n_expert != 0)
    throw Error("layer " + std::to_string(layer) + ": tensor " + std::string(t->name) + " stacks " +
                std::to_string(stacked) + " experts in " + std::to_string(t->n_bytes) + " bytes, but the router has " +
                std::to_string(n_expert) + ": the model file is inconsistent");
  return t->n_bytes / n_expert;
}

}  // namespace

ExpertGeometry expert_geometry(const ModelWeights& weights) {
  ExpertGeometry g;
  g.layers.resize(weights.layers.size());
  for (size_t il = 0; il < weights.layers.size(); ++il) {
    const LayerWeights& lw = weights.layers[il];
    const uint32_t n = lw.routing.n_expert;
    if (!lw.has_experts() || n == 0) continue;
    const ExpertStack& s = lw.experts;
    const uint32_t layer = static_cast<uint32_t>(il);
    uint64_t bytes = 0;
    // The matrices only: expert biases (gpt-oss) stay with the dense weights, never in a slot.
    for (Tensor t : {s.gate, s.up, s.down, s.gate_up}) bytes += per_expert(t, n, layer);
    g.layers[il] = {n, bytes};
  }
  return g;
}

}  // namespace strata::experts
