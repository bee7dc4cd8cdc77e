#include "strata/experts/cache_setup.hpp"

#include "strata/log.hpp"

namespace strata::experts {

std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               const DeviceRoom& room, const ModelIdentity& model) {
  SlotBudget budget = plan_slot_budget(experts.cache, geometry, room);
  log::info("expert cache: " + budget.describe());
  auto cache = std::make_unique<ExpertCache>(geometry, std::move(budget),
                                             make_eviction_policy(experts.policy, geometry.key_space()));
  if (experts.profile) {
    cache->fill_from_profile(ExpertProfile::load(*experts.profile, model));
    log::info("expert cache: filled from the profile " + *experts.profile);
  } else {
    cache->fill_uniform();
  }
  return cache;
}

}  // namespace strata::experts
