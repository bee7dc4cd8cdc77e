// The decode summary's expert block and the /metrics exposition, on counts made by hand.
#include <gtest/gtest.h>

#include "strata/experts/expert_report.hpp"

namespace ex = strata::experts;

namespace {

ex::ExpertStats sample_stats() {
  ex::ExpertStats s(ex::KeySpace{2, 2});
  s.slots = 2;
  s.windows = 4;
  s.positions = 4;
  s.swaps = 1;
  const auto use = [&](ex::ExpertKey k, bool hit, int times) {
    for (int i = 0; i < times; ++i) {
      s.layers[k.layer].add(hit, 1);
      s.experts[s.keys.index(k)].add(hit, 1);
    }
  };
  use({0, 0}, true, 3);
  use({0, 1}, false, 1);
  use({1, 0}, true, 1);
  use({1, 1}, false, 3);
  return s;
}

ex::PlanCounters sample_plans() {
  ex::PlanCounters c;
  c.positions = 4;
  c.windows = 4;
  c.layers.assign(2, ex::SourceTable{});
  const auto put = [&](uint32_t layer, ex::ExpertSource s, uint64_t n) {
    c.layers[layer][static_cast<size_t>(s)] = {n, n, n * 4096};
    ex::SourceCounts& t = c.total[static_cast<size_t>(s)];
    t.experts += n;
    t.tokens += n;
    t.bytes += n * 4096;
  };
  put(0, ex::ExpertSource::Hit, 3);
  put(0, ex::ExpertSource::Pcie, 1);
  put(1, ex::ExpertSource::Hit, 1);
  put(1, ex::ExpertSource::Pcie, 1);
  put(1, ex::ExpertSource::Cpu, 2);
  return c;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(ExpertsReport, SummaryWithoutAndWithPlans) {
  const ex::ExpertStats s = sample_stats();
  EXPECT_EQ(ex::render_expert_summary(s, nullptr),
            "expert cache: 2 slots, 50.0% hits (4 of 8 expert uses, 50.0% of their tokens) over 4 windows, 4 "
            "positions; 1 swaps, 0 aborted\n"
            "layer   hits  misses   hit%\n"
            "    0      3       1   75.0\n"
            "    1      1       3   25.0\n");
  const ex::PlanCounters plans = sample_plans();
  EXPECT_EQ(ex::render_expert_summary(s, &plans),
            "expert cache: 2 slots, 50.0% hits (4 of 8 expert uses, 50.0% of their tokens) over 4 windows, 4 "
            "positions; 1 swaps, 0 aborted\n"
            "per token: hit 1.00, peer 0.00, pcie 0.50, cpu 0.50 experts; 4.0 KiB from VRAM, 0 B from the peer, "
            "2.0 KiB over PCIe, 2.0 KiB from RAM\n"
            "layer   hits  misses   hit%   peer   pcie    cpu\n"
            "    0      3       1   75.0      0      1      0\n"
            "    1      1       3   25.0      0      1      2\n");
}

TEST(ExpertsReport, SummarySkipsLayersWithoutUses) {
  ex::ExpertStats s(ex::KeySpace{3, 2});
  s.layers[2].add(true, 5);
  const std::string text = ex::render_expert_summary(s, nullptr);
  EXPECT_EQ(count(text, "\n    2 "), 1u);
  EXPECT_EQ(count(text, "\n    0 "), 0u);
  EXPECT_NE(text.find("100.0% hits (1 of 1 expert uses, 100.0% of their tokens) over 0 windows"), std::string::npos);
}

TEST(ExpertsReport, PrometheusExposition) {
  const ex::ExpertStats s = sample_stats();
  const std::string layers = ex::render_expert_metrics(s, nullptr, ex::MetricsDetail::Layers);
  EXPECT_EQ(layers,
            "# HELP strata_expert_hits_total Distinct experts of a window found in this device's cache slots.\n"
            "# TYPE strata_expert_hits_total counter\n"
            "strata_expert_hits_total{layer=\"0\"} 3\n"
            "strata_expert_hits_total{layer=\"1\"} 1\n"
            "# HELP strata_expert_misses_total Distinct experts of a window not in this device's cache slots.\n"
            "# TYPE strata_expert_misses_total counter\n"
            "strata_expert_misses_total{layer=\"0\"} 1\n"
            "strata_expert_misses_total{layer=\"1\"} 3\n"
            "# HELP strata_expert_hit_tokens_total Tokens routed to experts found in the cache.\n"
            "# TYPE strata_expert_hit_tokens_total counter\n"
            "strata_expert_hit_tokens_total{layer=\"0\"} 3\n"
            "strata_expert_hit_tokens_total{layer=\"1\"} 1\n"
            "# HELP strata_expert_miss_tokens_total Tokens routed to experts not in the cache.\n"
            "# TYPE strata_expert_miss_tokens_total counter\n"
            "strata_expert_miss_tokens_total{layer=\"0\"} 1\n"
            "strata_expert_miss_tokens_total{layer=\"1\"} 3\n"
            "# HELP strata_expert_cache_slots Expert slots of this device's cache.\n"
            "# TYPE strata_expert_cache_slots gauge\n"
            "strata_expert_cache_slots 2\n"
            "# HELP strata_expert_windows_total Windows recorded by the expert cache.\n"
            "# TYPE strata_expert_windows_total counter\n"
            "strata_expert_windows_total 4\n"
            "# HELP strata_expert_positions_total Token positions of those windows.\n"
            "# TYPE strata_expert_positions_total counter\n"
            "strata_expert_positions_total 4\n"
            "# HELP strata_expert_swaps_total Adaptive swaps whose copy landed.\n"
            "# TYPE strata_expert_swaps_total counter\n"
            "strata_expert_swaps_total 1\n"
            "# HELP strata_expert_swap_aborts_total Adaptive swaps whose copy failed.\n"
            "# TYPE strata_expert_swap_aborts_total counter\n"
            "strata_expert_swap_aborts_total 0\n");

  const ex::PlanCounters plans = sample_plans();
  const std::string all = ex::render_expert_metrics(s, &plans, ex::MetricsDetail::LayersAndExperts);
  EXPECT_EQ(all.rfind(layers, 0), 0u);  // the same families first
  EXPECT_NE(all.find("strata_expert_planned_total{layer=\"1\",source=\"cpu\"} 2\n"), std::string::npos);
  EXPECT_NE(all.find("strata_expert_planned_total{layer=\"0\",source=\"peer\"} 0\n"), std::string::npos);
  EXPECT_NE(all.find("strata_expert_planned_tokens_total{source=\"hit\"} 4\n"), std::string::npos);
  EXPECT_NE(all.find("strata_expert_planned_bytes_total{source=\"pcie\"} 8192\n"), std::string::npos);
  EXPECT_NE(all.find("strata_expert_uses_by_expert_total{layer=\"1\",expert=\"1\",result=\"miss\"} 3\n"),
            std::string::npos);
  EXPECT_NE(all.find("strata_expert_uses_by_expert_total{layer=\"0\",expert=\"0\",result=\"hit\"} 3\n"),
            std::string::npos);
  EXPECT_EQ(count(all, "strata_expert_planned_total{"), 8u);
  EXPECT_EQ(count(all, "strata_expert_uses_by_expert_total{"), 8u);
  // Each family has exactly one HELP and one TYPE line.
  EXPECT_EQ(count(all, "# HELP "), 13u);
  EXPECT_EQ(count(all, "# TYPE "), 13u);
  EXPECT_EQ(count(all, "# TYPE strata_expert_uses_by_expert_total counter\n"), 1u);
}
