#include "strata/experts/expert_deal.hpp"

#include <cmath>
#include <string>

#include "strata/error.hpp"

namespace strata::experts {

std::vector<ExpertKey> uniform_rank(const ExpertGeometry& geometry) {
  std::vector<ExpertKey> rank;
  for (uint32_t e = 0; e < geometry.max_experts(); ++e) {
    for (uint32_t l = 0; l < geometry.n_layer(); ++l) {
      if (geometry.has({l, e})) rank.push_back({l, e});
    }
  }
  return rank;
}

DealtExperts deal_experts(std::span<const ExpertKey> rank, const ExpertGeometry& geometry, const SlotBudget& own,
                          const SlotBudget& peer, double peer_hot) {
  if (!(peer_hot >= 0.0 && peer_hot <= 1.0)) {
    throw Error("experts.peer_hot is " + std::to_string(peer_hot) +
                "; it is the share of the hottest experts placed on the peer card, between 0 and 1");
  }
  if (own.classes.size() != peer.classes.size() || own.layer_class != peer.layer_class) {
    throw Error("internal: the two cards' slot budgets are of different expert geometries");
  }
  const size_t n_class = own.classes.size();
  std::vector<uint32_t> own_left(n_class), peer_left(n_class);
  std::vector<uint64_t> dealt(n_class, 0);
  for (size_t c = 0; c < n_class; ++c) {
    own_left[c] = own.classes[c].n_slots;
    peer_left[c] = peer.classes[c].n_slots;
  }
  DealtExperts out;
  for (ExpertKey key : rank) {
    if (!geometry.has(key) || key.layer >= own.layer_class.size()) continue;
    const uint32_t c = own.layer_class[key.layer];
    if (own_left[c] == 0 && peer_left[c] == 0) continue;
    // The i-th expert dealt in a class goes to the peer when the peer's running share floor(i x peer_hot) steps up:
    // with 0.5, ranks 1, 3, 5, ... of the class.
    const uint64_t i = dealt[c]++;
    const bool peer_turn = std::floor(static_cast<double>(i + 1) * peer_hot) > std::floor(static_cast<double>(i) * peer_hot);
    const bool to_peer = peer_left[c] > 0 && (peer_turn || own_left[c] == 0);
    if (to_peer) {
      --peer_left[c];
      out.peer.push_back(key);
    } else {
      --own_left[c];
      out.own.push_back(key);
    }
  }
  return out;
}

}  // namespace strata::experts
