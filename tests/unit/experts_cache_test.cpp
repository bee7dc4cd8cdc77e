// The expert cache: fills, hit counting, LRU against LFU on crafted sequences, the bounds of plan_swaps, pending
// moves until commit or abort, and reproducibility.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "strata/error.hpp"
#include "strata/experts/expert_cache.hpp"
#include "error_text.hpp"
#include "slot_budget_support.hpp"

namespace ex = strata::experts;
namespace cfg = strata::config;

namespace {

using strata::test::budget_of;
using strata::test::geometry;

ex::ExpertCache make_cache(const ex::ExpertGeometry& g, uint64_t bytes, cfg::CachePolicy policy) {
  return ex::ExpertCache(g, budget_of(g, bytes), ex::make_eviction_policy(policy, g.key_space()));
}

// One window of one layer: experts with one token each.
void window(ex::ExpertCache& c, uint32_t layer, std::vector<uint32_t> experts) {
  c.begin_window(1);
  std::vector<ex::ExpertUse> uses;
  for (uint32_t e : experts) uses.push_back({e, 1});
  c.record(layer, uses);
}

std::vector<ex::ExpertKey> contents(const ex::ExpertCache& c) {
  std::vector<ex::ExpertKey> keys;
  for (uint32_t s = 0; s < c.n_slots(); ++s) {
    const auto k = c.content(s);
    keys.push_back(k ? *k : ex::ExpertKey{999, 999});
  }
  return keys;
}

using strata::test::error_of;

}  // namespace

TEST(ExpertsCache, UniformFillGivesEachLayerItsLowestExperts) {
  const ex::ExpertGeometry g = geometry({100, 100, 0, 100}, 8);
  ex::ExpertCache c = make_cache(g, 700, cfg::CachePolicy::Lfu);  // 3 x 300 = 2 rounds, then layer 0
  c.fill_uniform();
  const std::vector<ex::ExpertKey> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {3, 0}, {3, 1}};
  EXPECT_EQ(contents(c), expected);
  EXPECT_EQ(c.slot_of({1, 1}), 4u);
  EXPECT_EQ(c.usable_slot({3, 1}), 6u);
  EXPECT_EQ(c.slot_of({3, 2}), std::nullopt);
  EXPECT_EQ(c.slot_of({9, 0}), std::nullopt);
  EXPECT_EQ(c.stats().slots, 7u);
}

TEST(ExpertsCache, ProfileFillTakesEachClassesMostUsedExperts) {
  // Layers 0 and 2 share a class (100 B), layer 1 is its own (150 B); 2 slots per layer.
  const ex::ExpertGeometry g = geometry({100, 150, 100}, 4);
  ex::ExpertCache c = make_cache(g, 700, cfg::CachePolicy::Lfu);
  ASSERT_EQ(c.budget().classes.size(), 2u);
  ex::ExpertProfile p({"m", 3, 4});
  p.record_positions(100);
  // Class of layers 0 and 2: the four hottest are (2,3) 90, (2,1) 80, (0,0) 50, (2,0) 50; layer 0 gets one slot.
  p.record({2, 3}, 90);
  p.record({2, 1}, 80);
  p.record({0, 0}, 50);
  p.record({2, 0}, 50);
  p.record({0, 1}, 10);
  // Layer 1's class: its two hottest; (1,2) and (1,3) tie at 0 and lose to the used ones.
  p.record({1, 1}, 5);
  p.record({1, 0}, 1);
  c.fill_from_profile(p);
  const std::vector<ex::ExpertKey> expected = {{0, 0}, {2, 0}, {2, 1}, {2, 3}, {1, 0}, {1, 1}};
  EXPECT_EQ(contents(c), expected);
  // The policy starts from the profile's rates: a miss with no history is colder than a profiled resident.
  EXPECT_GT(c.policy().heat({2, 3}), c.policy().heat({0, 0}));
  EXPECT_EQ(c.policy().heat({1, 3}), 0.0);

  EXPECT_EQ(error_of([&] {
              c.fill_from_profile(ex::ExpertProfile({"m", 3, 5}));
            }),
            "expert cache: the profile is of 3 layers x 5 experts; the model has 3 x 4");
}

TEST(ExpertsCache, RecordCountsHitsAndMissesPerLayerAndExpert) {
  const ex::ExpertGeometry g = geometry({100, 100}, 4);
  ex::ExpertCache c = make_cache(g, 400, cfg::CachePolicy::Lfu);
  c.fill_uniform();  // (0,0) (0,1) (1,0) (1,1)
  c.begin_window(3);
  const std::vector<ex::ExpertUse> l0 = {{1, 2}, {3, 1}, {0, 3}};
  c.record(0, l0);
  const std::vector<ex::ExpertUse> l1 = {{2, 3}};
  c.record(1, l1);
  const ex::ExpertStats& s = c.stats();
  EXPECT_EQ(s.layers[0].hits, 2u);
  EXPECT_EQ(s.layers[0].misses, 1u);
  EXPECT_EQ(s.layers[0].hit_tokens, 5u);
  EXPECT_EQ(s.layers[0].miss_tokens, 1u);
  EXPECT_EQ(s.layers[1].misses, 1u);
  EXPECT_EQ(s.of({0, 3}).misses, 1u);
  EXPECT_EQ(s.of({0, 1}).hits, 1u);
  EXPECT_EQ(s.of({0, 1}).hit_tokens, 2u);
  EXPECT_EQ(s.windows, 1u);
  EXPECT_EQ(s.positions, 3u);
  EXPECT_EQ(s.total().uses(), 4u);
  EXPECT_DOUBLE_EQ(s.total().hit_rate(), 0.5);
}

TEST(ExpertsCache, RecordRefusesBadListsWithoutCountingThem) {
  const ex::ExpertGeometry g = geometry({100, 0}, 4);
  ex::ExpertCache c = make_cache(g, 200, cfg::CachePolicy::Lfu);
  c.begin_window(1);
  const std::vector<ex::ExpertUse> twice = {{1, 1}, {2, 1}, {1, 1}};
  EXPECT_EQ(error_of([&] { c.record(0, twice); }),
            "expert cache: layer 0 expert 1 is listed twice in one layer's uses");
  const std::vector<ex::ExpertUse> past = {{4, 1}};
  EXPECT_EQ(error_of([&] { c.record(0, past); }), "expert cache: layer 0 expert 4 is past the layer's 4 experts");
  EXPECT_EQ(error_of([&] { c.record(1, past); }), "expert cache: layer 1 has no routed experts");
  EXPECT_EQ(c.stats().total().uses(), 0u);
  const std::vector<ex::ExpertUse> one = {{2, 1}};
  c.record(0, one);
  EXPECT_EQ(error_of([&] { c.record(0, one); }), "expert cache: layer 0 expert 2 was already recorded in this window");
  EXPECT_EQ(c.stats().total().uses(), 1u);
}

// The same uses, two policies: LRU evicts what was used longest ago, LFU what was used least.
TEST(ExpertsCache, LruAndLfuEvictDifferentExperts) {
  const ex::ExpertGeometry g = geometry({100}, 4);
  const auto run = [&](cfg::CachePolicy policy) {
    ex::ExpertCache c = make_cache(g, 200, policy);
    c.fill_uniform();  // 0 and 1
    window(c, 0, {0});
    window(c, 0, {0});
    window(c, 0, {0});
    window(c, 0, {1});
    window(c, 0, {2});  // a miss
    const std::vector<ex::SwapMove> moves = c.plan_swaps(1);
    EXPECT_EQ(moves.size(), 1u);
    return moves.empty() ? ex::SwapMove{} : moves[0];
  };
  EXPECT_EQ(run(cfg::CachePolicy::Lru), (ex::SwapMove{0, ex::ExpertKey{0, 0}, {0, 2}}));
  EXPECT_EQ(run(cfg::CachePolicy::Lfu), (ex::SwapMove{1, ex::ExpertKey{0, 1}, {0, 3 - 1}}));
}

// A longer crafted sequence: the order in which each policy gives up its residents.
TEST(ExpertsCache, EvictionOrderOverASequence) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  const auto evictions = [&](cfg::CachePolicy policy) {
    ex::ExpertCache c = make_cache(g, 300, policy);
    c.fill_uniform();  // 0 1 2
    // Uses: 2 often early, 1 once late, 0 twice in the middle.
    for (const std::vector<uint32_t>& w : std::vector<std::vector<uint32_t>>{{2}, {2}, {2}, {0}, {0}, {1}})
      window(c, 0, w);
    std::vector<uint32_t> order;
    for (uint32_t incoming : {5u, 6u, 7u}) {
      window(c, 0, {incoming});
      const std::vector<ex::SwapMove> m = c.plan_swaps(1);
      if (m.size() != 1 || !m[0].evicted) return std::vector<uint32_t>{};
      order.push_back(m[0].evicted->expert);
      c.commit(m[0]);
    }
    return order;
  };
  EXPECT_EQ(evictions(cfg::CachePolicy::Lru), (std::vector<uint32_t>{2, 0, 1}));
  // LFU gives up 1 (one token), then each newcomer in turn: used once, it is colder than 0 (two) and 2 (three),
  // so one slot churns and the frequent experts stay.
  EXPECT_EQ(evictions(cfg::CachePolicy::Lfu), (std::vector<uint32_t>{1, 5, 6}));
}

TEST(ExpertsCache, PlanSwapsIsBoundedAndTakesTheHottestMissesFirst) {
  const ex::ExpertGeometry g = geometry({100}, 16);
  ex::ExpertCache c = make_cache(g, 400, cfg::CachePolicy::Lfu);
  c.fill_uniform();  // 0..3, never used: heat 0
  c.begin_window(8);
  const std::vector<ex::ExpertUse> uses = {{9, 1}, {10, 5}, {11, 3}, {12, 5}, {2, 2}};
  c.record(0, uses);
  EXPECT_TRUE(c.plan_swaps(0).empty());  // adapt_swaps 0: a fixed cache
  const std::vector<ex::SwapMove> m = c.plan_swaps(3);
  // Misses by heat: 10 and 12 (5 tokens: by id), then 11. Slots by heat: 0, 1, 3 (all 0: by key); 2 is in use.
  const std::vector<ex::SwapMove> expected = {
      {0, ex::ExpertKey{0, 0}, {0, 10}}, {1, ex::ExpertKey{0, 1}, {0, 12}}, {3, ex::ExpertKey{0, 3}, {0, 11}}};
  EXPECT_EQ(m, expected);
  EXPECT_EQ(c.pending_moves(), 3u);
  // Planning again proposes nothing new: the slots left are in use or pending, the misses are on their way.
  EXPECT_TRUE(c.plan_swaps(3).empty());
}

TEST(ExpertsCache, NeverEvictsWhatTheWindowUsesNorSwapsForAColderMiss) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  ex::ExpertCache c = make_cache(g, 200, cfg::CachePolicy::Lfu);
  c.fill_uniform();
  window(c, 0, {0, 1, 5});
  EXPECT_TRUE(c.plan_swaps(4).empty());  // both residents are in use
  c.begin_window(1);
  const std::vector<ex::ExpertUse> hot = {{0, 4}, {1, 4}};
  c.record(0, hot);
  window(c, 0, {6});  // 6 has 1 token; 0 and 1 are far hotter
  EXPECT_TRUE(c.plan_swaps(4).empty());
}

TEST(ExpertsCache, EmptySlotsFillFirstAndClassesStayApart) {
  // Class of layer 0 (100 B, 1 slot) and of layer 1 (150 B, 1 slot).
  const ex::ExpertGeometry g = geometry({100, 150}, 4);
  ex::ExpertCache c = make_cache(g, 250, cfg::CachePolicy::Lru);
  // Not filled: every slot is empty.
  c.begin_window(1);
  const std::vector<ex::ExpertUse> a = {{3, 1}, {2, 1}};
  c.record(0, a);
  const std::vector<ex::ExpertUse> b = {{1, 1}};
  c.record(1, b);
  const std::vector<ex::SwapMove> m = c.plan_swaps(4);
  // One per class: layer 0's two misses compete for its single slot (equal heat: by expert id).
  const std::vector<ex::SwapMove> expected = {{0, std::nullopt, {0, 2}}, {1, std::nullopt, {1, 1}}};
  EXPECT_EQ(m, expected);
}

TEST(ExpertsCache, PendingMovesReportTheOldContentUntilCommit) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  ex::ExpertCache c = make_cache(g, 200, cfg::CachePolicy::Lru);
  c.fill_uniform();
  window(c, 0, {1, 6});
  const std::vector<ex::SwapMove> m = c.plan_swaps(2);
  ASSERT_EQ(m.size(), 1u);
  const ex::SwapMove move = m[0];
  EXPECT_EQ(move, (ex::SwapMove{0, ex::ExpertKey{0, 0}, {0, 6}}));
  // While the copy runs: the slot still holds 0 as far as residency goes, but nobody may read it.
  EXPECT_TRUE(c.pending(0));
  EXPECT_EQ(c.content(0), (ex::ExpertKey{0, 0}));
  EXPECT_EQ(c.slot_of({0, 0}), 0u);
  EXPECT_EQ(c.usable_slot({0, 0}), std::nullopt);
  EXPECT_EQ(c.slot_of({0, 6}), std::nullopt);
  EXPECT_EQ(c.usable_slot({0, 6}), std::nullopt);
  EXPECT_EQ(c.usable_slot({0, 1}), 1u);
  EXPECT_EQ(error_of([&] { c.fill_uniform(); }),
            "expert cache: fill_uniform while 1 swaps are pending: commit or abort them first");
  // A window during the copy counts 0 as a miss.
  window(c, 0, {0});
  EXPECT_EQ(c.stats().of({0, 0}).misses, 1u);
  EXPECT_TRUE(c.plan_swaps(2).empty());  // 0 is still committed in slot 0: not a candidate

  c.commit(move);
  EXPECT_FALSE(c.pending(0));
  EXPECT_EQ(c.content(0), (ex::ExpertKey{0, 6}));
  EXPECT_EQ(c.usable_slot({0, 6}), 0u);
  EXPECT_EQ(c.slot_of({0, 0}), std::nullopt);
  EXPECT_EQ(c.stats().swaps, 1u);
  EXPECT_EQ(c.pending_moves(), 0u);
  EXPECT_EQ(error_of([&] { c.commit(move); }),
            "expert cache: slot 0 (layer 0 expert 0 -> layer 0 expert 6) is not a pending move of this cache");
  EXPECT_EQ(error_of([&] {
              c.commit({7, std::nullopt, {0, 1}});
            }),
            "expert cache: slot 7 (empty -> layer 0 expert 1) is not a pending move of this cache");
}

TEST(ExpertsCache, AbortKeepsOrEmptiesTheSlot) {
  const ex::ExpertGeometry g = geometry({100}, 8);
  ex::ExpertCache c = make_cache(g, 200, cfg::CachePolicy::Lru);
  c.fill_uniform();
  window(c, 0, {5, 6});
  const std::vector<ex::SwapMove> m = c.plan_swaps(2);
  ASSERT_EQ(m.size(), 2u);
  c.abort(m[0], ex::AbortedCopy::NotStarted);
  EXPECT_EQ(c.usable_slot(*m[0].evicted), m[0].slot);
  EXPECT_EQ(c.slot_of(m[0].incoming), std::nullopt);
  c.abort(m[1], ex::AbortedCopy::Partial);
  EXPECT_EQ(c.content(m[1].slot), std::nullopt);
  EXPECT_EQ(c.slot_of(*m[1].evicted), std::nullopt);
  EXPECT_EQ(c.stats().aborted_swaps, 2u);
  EXPECT_EQ(c.stats().swaps, 0u);
  EXPECT_EQ(c.pending_moves(), 0u);
  EXPECT_THROW(c.abort(m[1], ex::AbortedCopy::Partial), strata::Error);
  // The misses may be planned again; the emptied slot is taken first.
  window(c, 0, {6});
  const std::vector<ex::SwapMove> again = c.plan_swaps(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], (ex::SwapMove{m[1].slot, std::nullopt, {0, 6}}));
}

// The same uses give the same moves; residency stays a bijection between slots and keys throughout.
TEST(ExpertsCache, RandomRunsAreReproducibleAndConsistent) {
  const ex::ExpertGeometry g = geometry({100, 120, 100, 0, 120}, 32);
  const auto run = [&](cfg::CachePolicy policy) {
    ex::ExpertCache c = make_cache(g, 4000, policy);
    c.fill_uniform();
    std::vector<ex::SwapMove> all;
    uint64_t state = 12345;
    const auto next = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<uint32_t>(state >> 33);
    };
    for (int w = 0; w < 300; ++w) {
      c.begin_window(4);
      for (uint32_t layer : {0u, 1u, 2u, 4u}) {
        std::vector<ex::ExpertUse> uses;
        std::vector<bool> seen(32, false);
        for (int t = 0; t < 6; ++t) {
          // Skewed: low ids are popular.
          const uint32_t e = (next() % 32) * (next() % 32) / 32;
          if (!seen[e]) uses.push_back({e, 1 + next() % 4});
          seen[e] = true;
        }
        c.record(layer, uses);
      }
      const std::vector<ex::SwapMove> moves = c.plan_swaps(3);
      EXPECT_LE(moves.size(), 3u);
      for (size_t i = 0; i < moves.size(); ++i) {
        // Every third copy fails before it started; the rest land.
        if ((w + static_cast<int>(i)) % 3 == 0)
          c.abort(moves[i], ex::AbortedCopy::NotStarted);
        else
          c.commit(moves[i]);
      }
      all.insert(all.end(), moves.begin(), moves.end());
      for (uint32_t s = 0; s < c.n_slots(); ++s) {
        const auto k = c.content(s);
        if (!k) continue;
        EXPECT_EQ(c.slot_of(*k), s);
        EXPECT_EQ(c.budget().layer_class[k->layer], s < c.budget().classes[1].first_slot ? 0u : 1u);
      }
    }
    return all;
  };
  for (cfg::CachePolicy policy : {cfg::CachePolicy::Lru, cfg::CachePolicy::Lfu}) {
    const std::vector<ex::SwapMove> first = run(policy);
    EXPECT_GT(first.size(), 20u);
    EXPECT_EQ(first, run(policy));
  }
}

TEST(ExpertsCache, ABudgetOfAnotherModelIsRefused) {
  const ex::ExpertGeometry g = geometry({100, 100}, 4);
  const ex::SlotBudget other = budget_of(geometry({100}, 4), 200);
  EXPECT_EQ(error_of([&] { ex::ExpertCache(g, other, ex::make_lru_policy(g.key_space())); }),
            "expert cache: the slot budget was planned for 1 layers, the model has 2");
}
