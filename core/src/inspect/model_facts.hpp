// What inspect needs from the model layer for a file meant as a model: the expert counts (from the
// hyperparameters) and the architecture's check of the tensors. Problems become warnings, never errors.
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
  std::optional<ExpertCounts> experts;             // nullopt when needed but unknown
  std::optional<std::vector<std::string>> issues;  // the architecture check's findings; nullopt: not run
  std::vector<std::string> warnings;               // why something could not be read or checked
};

// `has_routed`: the file holds routed-expert tensors.
ModelFacts read_model_facts(const gguf::Model& model, bool has_routed);

}  // namespace strata::inspect
