// Text renderings of the expert cache's and the planner's counts: the block of the decode summary, and the
// Prometheus text exposition for /metrics (strata_expert_hits_total{layer="3"} ...).
#pragma once

#include <string>

#include "strata/experts/expert_stats.hpp"
#include "strata/experts/plan_counters.hpp"

namespace strata::experts {

// A few summary lines and a table of layers: hits, misses, hit rate, and with plans the PEER/PCIe/CPU split.
std::string render_expert_summary(const ExpertStats& cache, const PlanCounters* plans);

enum class MetricsDetail {
  Layers,            // series per layer (n_layer of each)
  LayersAndExperts,  // also per (layer, expert): n_layer x n_expert series, for a scrape that wants them
};
// Counters and gauges in Prometheus' text format (version 0.0.4), each family with its HELP and TYPE lines.
std::string render_expert_metrics(const ExpertStats& cache, const PlanCounters* plans, MetricsDetail detail);

}  // namespace strata::experts
