// The expert cache's counts: per layer and per expert, how many of the windows' distinct experts were found in
// this device's slots (hits) or not (misses), and the tokens behind them. Read by the decode summary, /metrics
// and the serving page (expert_report.hpp renders them).
#pragma once

#include <cstdint>
#include <vector>

#include "strata/experts/expert_key.hpp"

namespace strata::experts {

struct HitCounts {
  uint64_t hits = 0, misses = 0;             // distinct experts of a window
  uint64_t hit_tokens = 0, miss_tokens = 0;  // the tokens routed to them

  void add(bool hit, uint32_t tokens);
  void add(const HitCounts& other);
  uint64_t uses() const { return hits + misses; }
  double hit_rate() const;  // hits / uses; 0 with no uses
};

struct ExpertStats {
  KeySpace keys;
  std::vector<HitCounts> layers;   // per layer
  std::vector<HitCounts> experts;  // KeySpace-indexed
  uint64_t windows = 0;
  uint64_t positions = 0;  // token positions of those windows
  uint64_t swaps = 0;      // committed moves
  uint64_t aborted_swaps = 0;
  uint32_t slots = 0;

  explicit ExpertStats(KeySpace k = {});
  const HitCounts& of(ExpertKey key) const { return experts[keys.index(key)]; }
  HitCounts total() const;
};

}  // namespace strata::experts
