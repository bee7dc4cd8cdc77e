// What the planner asks a device's expert slots: which slot holds a key that may be read now. One view per
// device (this engine's cards, or another engine's card as its link publishes it); the planner knows several
// from the start.
#pragma once

#include <cstdint>
#include <optional>

#include "strata/experts/expert_key.hpp"

namespace strata::experts {

class ResidencyView {
 public:
  virtual ~ResidencyView() = default;
  // The slot holding key whose bytes may be read now, or nullopt (absent, or a copy into that slot is under way).
  virtual std::optional<uint32_t> usable_slot(ExpertKey key) const = 0;
};

}  // namespace strata::experts
