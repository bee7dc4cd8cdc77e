// Dealing the ranked experts between this card and a peer card (runtime.peer_device, experts.peer_hot): the share,
// a full card passing to the other, slot classes, the rank without a profile, and the two caches it fills.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "error_text.hpp"
#include "slot_budget_support.hpp"
#include "strata/error.hpp"
#include "strata/experts/cache_setup.hpp"
#include "strata/experts/expert_deal.hpp"
#include "strata/experts/planner.hpp"
#include "test_temp_dir.hpp"

namespace ex = strata::experts;
namespace cfg = strata::config;

namespace {

using strata::test::budget_of;
using strata::test::geometry;

std::vector<ex::ExpertKey> layer0(std::initializer_list<uint32_t> experts) {
  std::vector<ex::ExpertKey> keys;
  for (uint32_t e : experts) keys.push_back({0, e});
  return keys;
}

}  // namespace

TEST(ExpertsDeal, HalfGivesThePeerEverySecondRank) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  const std::vector<ex::ExpertKey> rank = layer0({5, 2, 7, 0, 1, 3, 6, 4});
  const ex::DealtExperts d = ex::deal_experts(rank, g, budget_of(g, 300), budget_of(g, 300), 0.5);
  EXPECT_EQ(d.own, layer0({5, 7, 1}));
  EXPECT_EQ(d.peer, layer0({2, 0, 3}));
}

TEST(ExpertsDeal, AFullCardPassesTheRestToTheOther) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  const std::vector<ex::ExpertKey> rank = layer0({0, 1, 2, 3, 4, 5, 6, 7});
  // One slot here, four on the peer: after rank 0 this card is full, and the peer takes ranks 1..4.
  const ex::DealtExperts d = ex::deal_experts(rank, g, budget_of(g, 100), budget_of(g, 400), 0.5);
  EXPECT_EQ(d.own, layer0({0}));
  EXPECT_EQ(d.peer, layer0({1, 2, 3, 4}));
}

TEST(ExpertsDeal, ShareZeroAndOneFillOneCardFirst) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  const std::vector<ex::ExpertKey> rank = layer0({0, 1, 2, 3, 4, 5, 6, 7});
  const ex::DealtExperts none = ex::deal_experts(rank, g, budget_of(g, 200), budget_of(g, 200), 0.0);
  EXPECT_EQ(none.own, layer0({0, 1}));
  EXPECT_EQ(none.peer, layer0({2, 3}));
  const ex::DealtExperts all = ex::deal_experts(rank, g, budget_of(g, 200), budget_of(g, 200), 1.0);
  EXPECT_EQ(all.own, layer0({2, 3}));
  EXPECT_EQ(all.peer, layer0({0, 1}));
  // A quarter: ranks 3, 7, ... go to the peer.
  const ex::DealtExperts quarter = ex::deal_experts(rank, g, budget_of(g, 800), budget_of(g, 800), 0.25);
  EXPECT_EQ(quarter.peer, layer0({3, 7}));
}

TEST(ExpertsDeal, EachSlotClassIsDealtApart) {
  // Layers 0 and 2 share a class (100 bytes), layer 1 has its own (150): each class alternates on its own count.
  const ex::ExpertGeometry g = geometry({100, 150, 100}, 4);
  const ex::SlotBudget own = budget_of(g, 100 * 2 + 150 * 1), peer = budget_of(g, 100 * 2 + 150 * 1);
  ASSERT_EQ(own.classes.size(), 2u);
  const std::vector<ex::ExpertKey> rank = ex::uniform_rank(g);
  const ex::DealtExperts d = ex::deal_experts(rank, g, own, peer, 0.5);
  // The uniform rank: expert 0 of every layer, then expert 1 of every layer, ...
  EXPECT_EQ(rank.front(), (ex::ExpertKey{0, 0}));
  EXPECT_EQ(rank[1], (ex::ExpertKey{1, 0}));
  EXPECT_EQ(rank[3], (ex::ExpertKey{0, 1}));
  EXPECT_EQ(d.own, (std::vector<ex::ExpertKey>{{0, 0}, {1, 0}, {0, 1}}));
  EXPECT_EQ(d.peer, (std::vector<ex::ExpertKey>{{2, 0}, {1, 1}, {2, 1}}));
  // No expert on both cards.
  std::set<ex::ExpertKey> seen(d.own.begin(), d.own.end());
  for (const ex::ExpertKey& k : d.peer) EXPECT_TRUE(seen.insert(k).second);
}

TEST(ExpertsDeal, RefusesAShareOutsideZeroToOne) {
  const ex::ExpertGeometry g = geometry({100}, 4);
  const std::vector<ex::ExpertKey> rank = ex::uniform_rank(g);
  try {
    ex::deal_experts(rank, g, budget_of(g, 100), budget_of(g, 100), 1.5);
    FAIL() << "dealt with peer_hot 1.5";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("experts.peer_hot"), std::string::npos) << e.what();
  }
}

TEST(ExpertsDeal, DealtCachesHoldTheirShareAndThePlannerSeesThePeer) {
  const ex::ExpertGeometry g = geometry({100, 100}, 4);
  cfg::ExpertsConfig c;
  c.cache = {cfg::CacheSize::Kind::Bytes, 0, 200};
  c.peer_hot = 0.5;
  const ex::ModelIdentity model{"two-by-four", 2, 4};
  ex::DealtCaches caches = ex::make_dealt_caches(c, g, budget_of(g, 200), budget_of(g, 200), model);
  // Uniform rank (0,0) (1,0) (0,1) (1,1): this card takes (0,0) and (0,1), the peer (1,0) and (1,1).
  EXPECT_TRUE(caches.own->usable_slot({0, 0}).has_value());
  EXPECT_TRUE(caches.own->usable_slot({0, 1}).has_value());
  EXPECT_TRUE(caches.peer->usable_slot({1, 0}).has_value());
  EXPECT_TRUE(caches.peer->usable_slot({1, 1}).has_value());
  EXPECT_FALSE(caches.own->usable_slot({1, 0}).has_value());
  const ex::Planner planner(g, {caches.own.get(), caches.peer.get()}, 0.0);
  const std::vector<ex::ExpertUse> uses{{0, 1}, {1, 1}, {2, 1}};
  const ex::LayerPlan plan = planner.plan(1, uses);
  ASSERT_EQ(plan.peer.size(), 2u);
  EXPECT_EQ(plan.peer[0].expert, 0u);
  EXPECT_EQ(plan.peer[0].device, 1u);
  EXPECT_EQ(plan.cpu.size(), 1u);
}

TEST(ExpertsDeal, FillKeysSkipsRepeatsAndOverflow) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  ex::ExpertCache cache(g, budget_of(g, 200), ex::make_eviction_policy(cfg::CachePolicy::Lru, g.key_space()));
  const std::vector<ex::ExpertKey> keys = layer0({6, 6, 3, 1});
  cache.fill_keys(keys);
  EXPECT_EQ(cache.content(0), (ex::ExpertKey{0, 3}));
  EXPECT_EQ(cache.content(1), (ex::ExpertKey{0, 6}));
  EXPECT_FALSE(cache.usable_slot({0, 1}).has_value());
}
