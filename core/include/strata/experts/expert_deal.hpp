// Dealing experts between this engine's card and a peer card (runtime.peer_device): the experts are ranked (by a
// profile, or without one in the uniform fill's order) and dealt down the rank, a `peer_hot` share to the peer:
// with 0.5, every second rank. A card whose slots of an expert's class are full passes the expert to the other;
// dealing stops when both are full. Each card then holds as many of the hottest experts as the other, and an
// expert sits on one card only.
#pragma once

#include <span>
#include <vector>

#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/expert_key.hpp"
#include "strata/experts/slot_budget.hpp"

namespace strata::experts {

struct DealtExperts {
  std::vector<ExpertKey> own, peer;  // in rank order
};

// The rank without a profile: expert 0 of every layer, then expert 1 of every layer, ... (the order in which the
// uniform fill gives each layer its first experts).
std::vector<ExpertKey> uniform_rank(const ExpertGeometry& geometry);

// Deals `rank` (keys the geometry lacks are skipped) into the two budgets' slot classes. The budgets must be of the
// same geometry (the same layers in each class). Throws strata::Error for a peer_hot outside 0..1.
DealtExperts deal_experts(std::span<const ExpertKey> rank, const ExpertGeometry& geometry, const SlotBudget& own,
                          const SlotBudget& peer, double peer_hot);

}  // namespace strata::experts
