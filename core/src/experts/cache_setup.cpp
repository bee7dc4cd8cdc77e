#include "strata/experts/cache_setup.hpp"

#include <optional>
#include <string>

#include "strata/experts/expert_deal.hpp"
#include "strata/log.hpp"

namespace strata::experts {

std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               const DeviceRoom& room, const ModelIdentity& model) {
  return make_expert_cache(experts, geometry, plan_slot_budget(experts.cache, geometry, room), model);
}

std::unique_ptr<ExpertCache> make_expert_cache(const config::ExpertsConfig& experts, const ExpertGeometry& geometry,
                                               SlotBudget budget, const ModelIdentity& model) {
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

DealtCaches make_dealt_caches(const config::ExpertsConfig& experts, const ExpertGeometry& geometry, SlotBudget own,
                              SlotBudget peer, const ModelIdentity& model) {
  std::optional<ExpertProfile> profile;
  if (experts.profile) profile = ExpertProfile::load(*experts.profile, model);
  const std::vector<ExpertKey> rank = profile ? profile->rank() : uniform_rank(geometry);
  const DealtExperts dealt = deal_experts(rank, geometry, own, peer, experts.peer_hot);
  log::info("expert caches: this card " + own.describe() + "; the peer card " + peer.describe() + "; the " +
            (profile ? "profile's" : "uniform") + " rank dealt with peer_hot " + std::to_string(experts.peer_hot).substr(0, 4));
  DealtCaches out;
  out.own = std::make_unique<ExpertCache>(geometry, std::move(own), make_eviction_policy(experts.policy, geometry.key_space()));
  out.peer = std::make_unique<ExpertCache>(geometry, std::move(peer), make_eviction_policy(experts.policy, geometry.key_space()));
  out.own->fill_keys(dealt.own, profile ? &*profile : nullptr);
  out.peer->fill_keys(dealt.peer, profile ? &*profile : nullptr);
  return out;
}

}  // namespace strata::experts
