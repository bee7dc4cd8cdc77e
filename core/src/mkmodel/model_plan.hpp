// Internal: a ModelSpec laid out as a GGUF: its keys (set on a Writer), its tensors with their types, and what
// fills each tensor.
#pragma once

#include <vector>

#include "strata/gguf.hpp"
#include "strata/mkmodel.hpp"

namespace strata::mkmodel {

struct TensorFill {
  enum class Kind { Ones, Random, Router };
  Kind kind = Kind::Random;
  float rms = 0.0f;  // Random and Router: root mean square of the values (before Router's row scales)
  uint32_t layer = 0;
};

// Checks the spec, sets every key on `w` and adds every tensor; `fills` gets one entry per tensor.
Plan build_model(const ModelSpec& spec, gguf::Writer& w, std::vector<TensorFill>& fills);

// The spec's projector checked against itself and the text model (strata::Error naming the field).
void check_projector(const ModelSpec& spec);
// The same for the vision projector of a spec that has one (projector_plan.cpp).
ProjectorPlan build_projector(const ModelSpec& spec, gguf::Writer& w, std::vector<TensorFill>& fills);

}  // namespace strata::mkmodel
