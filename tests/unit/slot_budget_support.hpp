// Expert geometries and slot budgets for the expert cache's tests: layers of given expert sizes (0: a dense layer)
// and a budget of a byte size on a device with room to spare.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/experts/slot_budget.hpp"

namespace strata::test {

inline experts::ExpertGeometry geometry(std::vector<uint64_t> bytes, uint32_t n_expert) {
  experts::ExpertGeometry g;
  for (uint64_t b : bytes) g.layers.push_back(b == 0 ? experts::LayerExperts{} : experts::LayerExperts{n_expert, b});
  return g;
}

inline experts::SlotBudget budget_of(const experts::ExpertGeometry& g, uint64_t bytes) {
  experts::DeviceRoom room;
  room.free_bytes = uint64_t{1} << 40;
  room.margin_bytes = 0;
  return experts::plan_slot_budget({config::CacheSize::Kind::Bytes, 0, bytes}, g, room);
}

}  // namespace strata::test
