// A device's expert cache as the launch's `experts:` section asks for it: the slot budget from experts.cache and
// the device's room, the policy from experts.policy, the first residents from experts.profile (or uniform). With a
// peer card (runtime.peer_device), the two cards' caches are filled together: the ranked experts dealt between them
// by experts.peer_hot (expert_deal.hpp).
#pragma once

#include <memory>

#include "strata/config.hpp"
#include "strata/experts/expert_cache.hpp"

namespace strata::experts {

// Throws strata::Error when the budget does not fit (slot_budget.hpp) or the profile cannot be used
// (expert_profile.hpp); the message says which key to change.
std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               const DeviceRoom& room, const ModelIdentity& model);
// The same with a budget planned already (plan_slot_budget).
std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               SlotBudget budget, const ModelIdentity& model);

struct DealtCaches {
  std::unique_ptr<ExpertCache> own, peer;
};
// This card's and the peer card's caches over their budgets, the experts of the profile's rank (or uniform_rank)
// dealt between them by experts.peer_hot. Each card's policy is its own; both are seeded by the profile.
DealtCaches make_dealt_caches(const config::ExpertsConfig& experts, const ExpertGeometry& geometry, SlotBudget own,
                              SlotBudget peer, const ModelIdentity& model);

}  // namespace strata::experts
