// The hybrid expert path on a real GPU (ctest label `gpu`): the routed experts split between a VRAM cache, PCIe
// reads into staging slots and cpu_avx2's expert pool must give the all-GPU engine's bytes (tiny: every logit of a
// prompt and 16 decode steps) and ids (qwen3-30b-a3b: 24 greedy tokens), for several budgets and splits, in fast
// mode (each decode step one CUDA graph waiting on flags) and in simple mode (a host step per MoE layer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/engine.hpp"
#include "strata/plugin_host.hpp"
#include "gpu_test_support.hpp"

namespace {

using strata::TokenId;
using strata::gpu_tests::gpu_backend;
using strata::gpu_tests::gpu_with_model_30b;
using strata::gpu_tests::plugins;
using strata::gpu_tests::tiny_model;

struct Hybrid {
  double percent = -1;  // < 0: every weight on the device (no hybrid)
  std::optional<double> pcie_frac;
  int swaps = 0;
  bool fast = true;
};

std::unique_ptr<strata::Engine> open(const std::string& model, const std::string& gpu, const Hybrid& h) {
  strata::EngineSettings s;
  s.context = 1024;
  s.graphs = h.fast;
  std::unique_ptr<strata::PluginInstance> pool;
  if (h.percent >= 0) {
    s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
    s.experts.cache.percent = h.percent;
    s.experts.pcie_frac = h.pcie_frac;
    s.experts.adapt_swaps = h.swaps;
    pool = plugins().instantiate("cpu_avx2");
  }
  auto e = std::make_unique<strata::Engine>(strata::Model::load(model),
                                            strata::make_plugin_backend(plugins().instantiate(gpu)), s, std::move(pool));
  EXPECT_EQ(e->hybrid(), h.percent >= 0);
  return e;
}

// A prompt of 40 tokens (a prefill window), then `steps` greedy tokens; returns every logit (or only the ids).
std::vector<float> run(strata::Engine& e, int steps, std::vector<TokenId>* ids) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(static_cast<TokenId>((i * 7919 + 11) % e.model().hparams().n_vocab));
  std::vector<float> all;
  std::span<const float> logits = e.feed(0, prompt);
  for (int i = 0; i < steps; ++i) {
    if (ids == nullptr) all.insert(all.end(), logits.begin(), logits.end());
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (ids != nullptr) ids->push_back(next);
    logits = e.feed(0, std::span<const TokenId>(&next, 1));
  }
  return all;
}

TEST(GpuHybrid, TinyLogitsEqualAllGpuAtEverySplit) {
  std::string why;
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) GTEST_SKIP() << why;
  auto all_gpu = open(tiny_model(), gpu, {});
  const std::vector<float> want = run(*all_gpu, 16, nullptr);
  for (const Hybrid& h : {Hybrid{25, 1.0, 0}, Hybrid{25, 0.0, 0}, Hybrid{25, 0.5, 4}, Hybrid{0, 0.5, 0}, Hybrid{100, 0.5, 0},
                          Hybrid{25, 0.5, 4, false}, Hybrid{0, 0.5, 0, false}}) {
    SCOPED_TRACE("cache " + std::to_string(h.percent) + "%, pcie_frac " + std::to_string(*h.pcie_frac) + ", swaps " +
                 std::to_string(h.swaps) + (h.fast ? ", fast mode" : ", simple mode"));
    auto e = open(tiny_model(), gpu, h);
    const std::vector<float> got = run(*e, 16, nullptr);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
    const std::string summary = e->expert_summary();
    EXPECT_EQ(summary.find("fast mode: 16 windows as one device program") != std::string::npos, h.fast) << summary;
    std::printf("%s", summary.c_str());
  }
}

TEST(GpuHybrid, Qwen3_30B_GreedyIdsEqualAllGpu) {
  std::string why, path;
  const std::string gpu = gpu_with_model_30b(path, why);
  if (gpu.empty()) GTEST_SKIP() << why;
  std::vector<TokenId> want, got_fast, got_simple;
  {
    auto all_gpu = open(path, gpu, {});
    run(*all_gpu, 24, &want);
  }
  {
    auto e = open(path, gpu, Hybrid{25, 0.4, 4});
    run(*e, 24, &got_fast);
    std::printf("%s", e->expert_summary().c_str());
  }
  {
    auto e = open(path, gpu, Hybrid{25, 0.4, 4, false});
    run(*e, 24, &got_simple);
  }
  EXPECT_EQ(got_fast, want);
  EXPECT_EQ(got_simple, want);
}

}  // namespace
