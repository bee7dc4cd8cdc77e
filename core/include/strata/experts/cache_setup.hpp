// A device's expert cache as the launch's `experts:` section asks for it: the slot budget from experts.cache and
// the device's room, the policy from experts.policy, the first residents from experts.profile (or uniform).
#pragma once

#include <memory>

#include "strata/config.hpp"
#include "strata/experts/expert_cache.hpp"

namespace strata::experts {

// Throws strata::Error when the budget does not fit (slot_budget.hpp) or the profile cannot be used
// (expert_profile.hpp); the message says which key to change.
std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               const DeviceRoom& room, const ModelIdentity& model);

}  // namespace strata::experts
