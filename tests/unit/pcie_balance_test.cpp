// plugins/pcie_balance: the fits recover known costs from noisy samples and forget an old regime, the choice is
// the brute-force minimum, one-sided choices explore every 64th time, bad samples are rejected; the plugin itself,
// loaded as a shared object, balances through its C interface and refuses bad options by name. The suites carry
// `pcie_balance` in their names (ctest -R balance).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "balance_model.hpp"
#include "strata/plugin_api.h"
#include "strata/plugin_host.hpp"

namespace {

using strata::balance::BalanceModel;
using strata::balance::BalanceSettings;
using strata::balance::LayerSample;

struct Costs {
  double a, c, d, g0, g;
  double pool(uint32_t n_cpu, uint32_t n_pcie) const { return n_cpu == 0 ? 0.0 : a + c * n_cpu + d * n_pcie; }
  double gpu(uint32_t n_pcie) const { return g0 + g * n_pcie; }
};

// n samples of random splits with uniform noise of +-noise us.
void feed(BalanceModel& m, const Costs& k, int n, double noise, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> cpu(0, 4), pcie(0, 4);
  std::uniform_real_distribution<double> e(-noise, noise);
  for (int i = 0; i < n; ++i) {
    const uint32_t nc = cpu(rng), np = pcie(rng);
    m.observe({nc, np, nc == 0 ? 0.0 : k.pool(nc, np) + e(rng), k.gpu(np) + e(rng)});
  }
}

TEST(pcie_balance_fit, RecoversKnownCoefficientsFromNoisySamples) {
  std::mt19937 rng(7);
  BalanceModel m;
  const Costs k{20, 45, 12, 6, 50};
  feed(m, k, 600, 3.0, rng);
  const auto& p = m.pool_fit().coefficients();
  const auto& g = m.gpu_fit().coefficients();
  EXPECT_NEAR(p[0], k.a, 1.5);
  EXPECT_NEAR(p[1], k.c, 1.0);
  EXPECT_NEAR(p[2], k.d, 1.0);
  EXPECT_NEAR(g[0], k.g0, 1.5);
  EXPECT_NEAR(g[1], k.g, 1.0);
  EXPECT_EQ(m.rejected(), 0u);
}

TEST(pcie_balance_fit, ForgetsAnOldRegime) {
  std::mt19937 rng(8);
  BalanceModel m;  // a memory of about 200 layers
  feed(m, {20, 45, 12, 6, 50}, 600, 2.0, rng);
  feed(m, {30, 90, 30, 6, 25}, 1000, 2.0, rng);  // a slower pool (fewer workers), a faster link
  EXPECT_NEAR(m.pool_fit().coefficients()[1], 90, 2.0);
  EXPECT_NEAR(m.pool_fit().coefficients()[2], 30, 2.0);
  EXPECT_NEAR(m.gpu_fit().coefficients()[1], 25, 2.0);
}

TEST(pcie_balance_choice, EqualsTheBruteForceMinimumOfTheFittedCosts) {
  std::mt19937 rng(9);
  for (const Costs& k : {Costs{20, 45, 12, 6, 50}, Costs{10, 200, 5, 8, 30}, Costs{5, 20, 18, 40, 90}}) {
    BalanceModel m;
    feed(m, k, 400, 1.0, rng);
    const auto& p = m.pool_fit().coefficients();
    const auto& g = m.gpu_fit().coefficients();
    for (uint32_t n = 0; n <= 16; ++n) {
      uint32_t want = 0;
      double lowest = std::numeric_limits<double>::infinity();
      for (uint32_t s = 0; s <= n; ++s) {  // s over PCIe, n - s on the pool
        const double pool = n - s == 0 ? 0.0 : std::max(0.0, p[0] + p[1] * (n - s) + p[2] * s);
        const double cost = std::max(std::max(0.0, g[0] + g[1] * s), pool);
        if (cost < lowest) lowest = cost, want = s;
      }
      EXPECT_EQ(m.best(n), want) << "n " << n << " costs a " << k.a << " c " << k.c;
    }
  }
}

TEST(pcie_balance_choice, SaysNothingUntilBothFitsAreWarm) {
  BalanceModel m;
  EXPECT_EQ(m.choose(3), BalanceModel::kNoOpinion);
  for (int i = 0; i < 15; ++i) m.observe({1, 1, 60, 55});
  EXPECT_EQ(m.choose(3), BalanceModel::kNoOpinion);
  m.observe({2, 0, 100, 6});
  EXPECT_NE(m.choose(3), BalanceModel::kNoOpinion);
}

TEST(pcie_balance_choice, ExploresEveryNthOneSidedLayer) {
  std::mt19937 rng(10);
  BalanceModel m;
  feed(m, {5, 10, 1, 20, 500}, 300, 0.5, rng);  // PCIe far dearer: everything stays on the pool
  ASSERT_EQ(m.best(3), 0u);
  std::vector<uint32_t> picks;
  for (int i = 0; i < 192; ++i) picks.push_back(m.choose(3));
  for (size_t i = 0; i < picks.size(); ++i) EXPECT_EQ(picks[i], (i + 1) % 64 == 0 ? 1u : 0u) << "layer " << i;
  EXPECT_EQ(m.explored(), 3u);
  // And the other side: the pool far dearer, everything over PCIe, one moves back every 64th layer.
  BalanceModel n;
  feed(n, {500, 900, 50, 5, 10}, 300, 0.5, rng);
  ASSERT_EQ(n.best(2), 2u);
  for (int i = 1; i <= 128; ++i) EXPECT_EQ(n.choose(2), i % 64 == 0 ? 1u : 2u) << "layer " << i;
}

TEST(pcie_balance_samples, BadSamplesAreRejectedNotFitted) {
  std::mt19937 rng(11);
  BalanceModel m;
  feed(m, {20, 45, 12, 6, 50}, 300, 1.0, rng);
  const auto pool = m.pool_fit().coefficients();
  const auto gpu = m.gpu_fit().coefficients();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const LayerSample& bad : {LayerSample{1, 1, nan, 60}, LayerSample{1, 1, 70, nan}, LayerSample{1, 1, -5, 60},
                                 LayerSample{1, 1, 70, -1}, LayerSample{1, 1, inf, 60}, LayerSample{2, 0, 2e5, 6},
                                 LayerSample{1, 0, 65 * 50.0, 6} /* a stall: 50 times the fitted cost */}) {
    EXPECT_FALSE(m.observe(bad)) << bad.pool_us << " " << bad.gpu_us;
  }
  EXPECT_EQ(m.rejected(), 7u);
  EXPECT_EQ(m.pool_fit().coefficients(), pool);
  EXPECT_EQ(m.gpu_fit().coefficients(), gpu);
  EXPECT_TRUE(m.observe({1, 0, 66, 6}));
}

// The real shared object, through the registry and the C interface.
TEST(pcie_balance_plugin, BalancesThroughItsInterfaceAndRefusesBadOptions) {
  strata::PluginSearchPath path;
  path.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
  path.origins.push_back("build plugin folder");
  strata::PluginRegistry registry(path);
  auto inst = registry.instantiate("pcie_balance", {"memory=150", "explore_every=32"});
  const auto* b = inst->get<strata_balancer_v1>(STRATA_BALANCER_FAMILY, STRATA_BALANCER_VERSION);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->choose(inst->ctx(), 0, 3), UINT32_MAX) << "no opinion before any sample";
  std::vector<strata_balance_sample> samples;
  for (uint32_t i = 0; i < 64; ++i) {
    const uint32_t nc = 1 + i % 3, np = i % 4;
    samples.push_back({i % 48, nc, np, 0, 20.0 + 45.0 * nc + 12.0 * np, 6.0 + 50.0 * np});
  }
  EXPECT_EQ(b->observe(inst->ctx(), samples.data(), samples.size()), nullptr);
  const uint32_t m = b->choose(inst->ctx(), 5, 4);
  EXPECT_LE(m, 4u);
  const std::string line = b->describe(inst->ctx());
  EXPECT_NE(line.find("pcie_balance: the pool"), std::string::npos) << line;
  EXPECT_NE(line.find("misses a layer on average"), std::string::npos) << line;
  for (const auto& [opt, named] : std::vector<std::pair<std::string, std::string>>{
           {"memory=1", "memory=1"}, {"explore_every=often", "explore_every=often"}, {"momentum=3", "unknown option 'momentum'"}}) {
    try {
      (void)registry.instantiate("pcie_balance", {opt});
      ADD_FAILURE() << opt << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

}  // namespace
