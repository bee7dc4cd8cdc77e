// Eviction policies: LRU's recency, LFU's decayed frequency (half-life, profile seeding, the epoch rescaling
// that keeps long runs finite).
#include <gtest/gtest.h>

#include <cmath>

#include "strata/error.hpp"
#include "strata/experts/eviction_policy.hpp"

namespace ex = strata::experts;

namespace {
const ex::KeySpace kKeys{2, 4};
}

TEST(ExpertsPolicy, LruHeatIsTheWindowOfTheLastUse) {
  auto p = ex::make_lru_policy(kKeys);
  EXPECT_EQ(p->name(), "lru");
  EXPECT_EQ(p->heat({0, 0}), 0.0);
  p->next_window();
  p->use({0, 0}, 50);
  p->next_window();
  p->use({1, 3}, 1);
  EXPECT_LT(p->heat({0, 0}), p->heat({1, 3}));
  p->next_window();
  p->use({0, 0}, 1);
  EXPECT_GT(p->heat({0, 0}), p->heat({1, 3}));
  EXPECT_EQ(p->heat({0, 1}), 0.0);
  // A profile does not make an expert recent.
  p->seed({0, 1}, 0.9);
  EXPECT_EQ(p->heat({0, 1}), 0.0);
}

TEST(ExpertsPolicy, LfuWeighsTokensAndHalvesEveryHalfLife) {
  auto p = ex::make_lfu_policy(kKeys, 4.0);
  EXPECT_EQ(p->name(), "lfu");
  p->next_window();
  p->use({0, 0}, 8);
  p->use({0, 1}, 1);
  EXPECT_DOUBLE_EQ(p->heat({0, 0}), 8.0);
  for (int i = 0; i < 4; ++i) p->next_window();
  EXPECT_NEAR(p->heat({0, 0}), 4.0, 1e-12);
  for (int i = 0; i < 4; ++i) p->next_window();
  EXPECT_NEAR(p->heat({0, 0}), 2.0, 1e-12);
  p->use({0, 1}, 1);
  // 1 x 2^-2 + 1 from this window.
  EXPECT_NEAR(p->heat({0, 1}), 1.25, 1e-12);
}

TEST(ExpertsPolicy, LfuSeedIsTheSteadyStateOfTheRate) {
  const double half_life = 16.0;
  auto p = ex::make_lfu_policy(kKeys, half_life);
  const double decay = std::exp2(-1.0 / half_life);
  p->seed({1, 2}, 0.5);
  EXPECT_NEAR(p->heat({1, 2}), 0.5 / (1.0 - decay), 1e-9);
  // Using it at that rate (1 token every other window) keeps it there on average.
  const double seeded = p->heat({1, 2});
  for (int w = 0; w < 2000; ++w) {
    p->next_window();
    if (w % 2 == 0) p->use({1, 2}, 1);
  }
  EXPECT_NEAR(p->heat({1, 2}), seeded, 0.05 * seeded);
}

TEST(ExpertsPolicy, LfuStaysExactAcrossItsRescaling) {
  // A half-life of one window doubles the scale each window: it is rescaled after about 333 windows.
  auto p = ex::make_lfu_policy(kKeys, 1.0);
  p->next_window();
  p->use({0, 0}, 1);
  for (int w = 0; w < 399; ++w) p->next_window();
  p->use({0, 1}, 3);
  EXPECT_DOUBLE_EQ(p->heat({0, 1}), 3.0);
  EXPECT_NEAR(p->heat({0, 0}) / std::ldexp(1.0, -399), 1.0, 1e-9);
  for (int w = 0; w < 1000; ++w) p->next_window();
  p->use({1, 0}, 1);
  EXPECT_DOUBLE_EQ(p->heat({1, 0}), 1.0);
  EXPECT_TRUE(std::isfinite(p->heat({0, 1})));
  EXPECT_LT(p->heat({0, 1}), p->heat({1, 0}));
}

TEST(ExpertsPolicy, BadKeysAndHalfLivesAreRefused) {
  auto lru = ex::make_lru_policy(kKeys);
  try {
    lru->use({2, 0}, 1);
    FAIL() << "used a key outside the key space";
  } catch (const strata::Error& e) {
    EXPECT_STREQ(e.what(), "lru policy: layer 2 expert 0 is outside its 2 layers x 4 experts");
  }
  auto lfu = ex::make_lfu_policy(kKeys);
  EXPECT_THROW(lfu->heat({0, 4}), strata::Error);
  EXPECT_THROW(ex::make_lfu_policy(kKeys, 0.0), strata::Error);
  EXPECT_THROW(ex::make_lfu_policy(kKeys, std::nan("")), strata::Error);
}

TEST(ExpertsPolicy, ConfigNamesThePolicy) {
  EXPECT_EQ(ex::make_eviction_policy(strata::config::CachePolicy::Lru, kKeys)->name(), "lru");
  EXPECT_EQ(ex::make_eviction_policy(strata::config::CachePolicy::Lfu, kKeys)->name(), "lfu");
}
