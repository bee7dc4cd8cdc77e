#include "strata/experts/plan_counters.hpp"

namespace strata::experts {

void PlanCounters::add(const LayerPlan& plan, const ExpertGeometry& geometry) {
  if (plan.layer >= layers.size()) layers.resize(plan.layer + 1, SourceTable{});
  const uint64_t expert_bytes = plan.layer < geometry.layers.size() ? geometry.layers[plan.layer].expert_bytes : 0;
  for (ExpertSource source : kExpertSources) {
    const size_t s = static_cast<size_t>(source);
    for (const PlannedExpert& e : plan.of(source)) {
      for (SourceCounts* c : {&total[s], &layers[plan.layer][s]}) {
        ++c->experts;
        c->tokens += e.tokens;
        c->bytes += expert_bytes;
      }
    }
  }
}

void PlanCounters::add_window(uint32_t window_positions) {
  ++windows;
  positions += window_positions;
}

double PlanCounters::experts_per_token(ExpertSource source) const {
  return positions == 0 ? 0.0 : static_cast<double>(of(source).tokens) / static_cast<double>(positions);
}

double PlanCounters::bytes_per_token(ExpertSource source) const {
  return positions == 0 ? 0.0 : static_cast<double>(of(source).bytes) / static_cast<double>(positions);
}

}  // namespace strata::experts
