// The planner's totals for the decode summary and /metrics: per source (HIT, PEER, PCIe, CPU) and per layer,
// the experts planned, the (token, expert) pairs they serve, and the bytes read from each source (one expert's
// matrices once per window).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "strata/experts/planner.hpp"

namespace strata::experts {

struct SourceCounts {
  uint64_t experts = 0;  // distinct experts of windows
  uint64_t tokens = 0;   // (token, expert) pairs
  uint64_t bytes = 0;
  bool operator==(const SourceCounts&) const = default;
};

using SourceTable = std::array<SourceCounts, kExpertSources.size()>;

struct PlanCounters {
  SourceTable total{};
  std::vector<SourceTable> layers;  // per layer, grown as plans arrive
  uint64_t windows = 0;
  uint64_t positions = 0;

  void add(const LayerPlan& plan, const ExpertGeometry& geometry);
  void add_window(uint32_t window_positions);

  const SourceCounts& of(ExpertSource source) const { return total[static_cast<size_t>(source)]; }
  // Per token position: expert evaluations and bytes taken from a source (0 before any window).
  double experts_per_token(ExpertSource source) const;
  double bytes_per_token(ExpertSource source) const;
};

}  // namespace strata::experts
