// The engine's routing counts (the serving page's heatmap) and a request's own pcie_frac (an engine request option
// the server passes through): counted on every path that sees the routes, paused balancer, unchanged ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "tiny_moe_model.hpp"

namespace {

using strata::TokenId;

std::vector<TokenId> prompt_of(int n) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  return p;
}

std::vector<TokenId> greedy(strata::Engine& e, int steps) {
  std::span<const float> logits = e.feed(0, prompt_of(20));
  std::vector<TokenId> ids;
  for (int i = 0; i < steps; ++i) {
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ids.push_back(next);
    logits = e.feed(0, std::span<const TokenId>(&next, 1));
  }
  return ids;
}

// Every MoE layer routes each fed token to k experts: each layer's row sums to tokens x k.
void expect_rows_sum_to(const strata::ExpertUsage& u, const strata::Engine& e, uint64_t tokens) {
  const auto& hp = e.model().hparams();
  ASSERT_EQ(u.n_layer, hp.n_layer);
  ASSERT_EQ(u.n_expert, hp.n_expert);
  ASSERT_EQ(u.routed.size(), size_t{u.n_layer} * u.n_expert);
  for (uint32_t l = 0; l < u.n_layer; ++l) {
    const auto row = u.routed.begin() + static_cast<std::ptrdiff_t>(size_t{l} * u.n_expert);
    EXPECT_EQ(std::accumulate(row, row + u.n_expert, uint64_t{0}), tokens * hp.n_expert_used) << "layer " << l;
  }
}

bool has_backend(const std::string& name) {
  const auto all = strata::test::backends_under_test();
  return std::find(all.begin(), all.end(), name) != all.end();
}

TEST(EngineUsage, CpuEnginesCountEveryRouteAndResetClearsThem) {
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(strata::test::tiny_moe_model(), backend);
    EXPECT_FALSE(e->set_request_pcie_frac(0.5)) << "no hybrid path: nothing to set";
    (void)greedy(*e, 5);
    const strata::ExpertUsage u = e->expert_usage();
    expect_rows_sum_to(u, *e, 20 + 5);
    EXPECT_TRUE(u.hits.empty());
    e->reset_expert_counts();
    const strata::ExpertUsage zero = e->expert_usage();
    EXPECT_TRUE(std::all_of(zero.routed.begin(), zero.routed.end(), [](uint64_t v) { return v == 0; }));
  }
}

TEST(EngineUsage, RequestShareOutsideZeroToOneIsRefused) {
  auto e = strata::test::open_engine(strata::test::tiny_moe_model(), "reference");
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    try {
      e->set_request_pcie_frac(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const strata::Error& err) {
      EXPECT_NE(std::string(err.what()).find("pcie_frac must be between 0 and 1"), std::string::npos) << err.what();
    }
  }
}

strata::config::ExpertsConfig quarter_cache() {
  strata::config::ExpertsConfig x;
  x.cache.kind = strata::config::CacheSize::Kind::Percent;
  x.cache.percent = 25;
  return x;
}

std::unique_ptr<strata::Engine> balanced_hybrid() {
  strata::EngineSettings s = strata::test::test_settings();
  s.experts = quarter_cache();
  s.threads = 2;
  return std::make_unique<strata::Engine>(
      strata::Model::load(strata::test::tiny_moe_model()),
      std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
      strata::test::built_plugins().instantiate("cpu_avx2"),
      strata::test::built_plugins().instantiate("pcie_balance", {"explore_every=8"}));
}

// The hybrid path counts routes in its cache: the same sums, and hits never above the routes.
TEST(EngineUsage, HybridPathCountsRoutesAndHits) {
  if (!has_backend("cpu_avx2")) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  auto e = balanced_hybrid();
  ASSERT_TRUE(e->hybrid());
  (void)greedy(*e, 6);
  const strata::ExpertUsage u = e->expert_usage();
  expect_rows_sum_to(u, *e, 20 + 6);
  ASSERT_EQ(u.hits.size(), u.routed.size());
  uint64_t hits = 0;
  for (size_t i = 0; i < u.hits.size(); ++i) {
    EXPECT_LE(u.hits[i], u.routed[i]);
    hits += u.hits[i];
  }
  EXPECT_GT(hits, 0u) << "a 25% cache holds some of the chosen experts";
}

// A request's own share pauses pcie_balance: no samples while it holds, the same ids; cleared, the balancer learns.
TEST(pcie_balance_engine, ARequestsOwnShareFreezesTheBalancer) {
  if (!has_backend("cpu_avx2")) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  std::vector<TokenId> want;
  {
    auto plain = strata::test::open_engine(strata::test::tiny_moe_model(), "cpu_avx2");
    want = greedy(*plain, 24);
  }
  auto e = balanced_hybrid();
  ASSERT_TRUE(e->set_request_pcie_frac(1.0));
  EXPECT_EQ(greedy(*e, 24), want);
  const std::string paused = e->expert_summary();
  EXPECT_NE(paused.find("(0 and 0 samples"), std::string::npos) << paused;
  EXPECT_NE(paused.find("pcie_frac 1.000"), std::string::npos) << paused;

  ASSERT_TRUE(e->set_request_pcie_frac(std::nullopt));
  e->cut(0, 0);
  EXPECT_EQ(greedy(*e, 24), want);
  const std::string learning = e->expert_summary();
  EXPECT_EQ(learning.find("(0 and 0 samples"), std::string::npos) << learning;
}

}  // namespace
