// What inspect needs to know about a file meant as a model: its expert counts, and the architecture's own check
// of its tensors, each problem a warning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/gguf.hpp"

namespace strata::inspect {

struct ExpertCounts {
  uint32_t n_expert = 0;  // 0 for a dense model
  uint32_t n_expert_used = 0;
};

struct ModelFacts {
  std::optional<ExpertCounts> experts;  // nullopt when they are needed but unknown or inconsistent
  std::vector<std::string> warnings;
};

// `has_routed`: the file holds routed-expert tensors.
ModelFacts read_model_facts(const gguf::Model& model, const std::string& architecture, bool has_routed);

}  // namespace strata::inspect
