#include "strata/experts/expert_stats.hpp"

namespace strata::experts {

void HitCounts::add(bool hit, uint32_t tokens) {
  if (hit) {
    ++hits;
    hit_tokens += tokens;
  } else {
    ++misses;
    miss_tokens += tokens;
  }
}

void HitCounts::add(const HitCounts& other) {
  hits += other.hits;
  misses += other.misses;
  hit_tokens += other.hit_tokens;
  miss_tokens += other.miss_tokens;
}

double HitCounts::hit_rate() const {
  return uses() == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(uses());
}

ExpertStats::ExpertStats(KeySpace k) : keys(k), layers(k.n_layer), experts(k.size()) {}

HitCounts ExpertStats::total() const {
  HitCounts t;
  for (const HitCounts& l : layers) t.add(l);
  return t;
}

}  // namespace strata::experts
