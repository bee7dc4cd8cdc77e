// strata_expert_form (backend 1.6, gpt-oss): an expert's biases and activation, checked the same way by the
// reference and every plugin, and bound to one expert's matrices for canonical_expert_row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/format/canonical.hpp"
#include "strata/plugin_api.h"

namespace strata::format {

// Why a form cannot be computed (an unknown activation, SWIGLU_OAI without a positive limit, a NaN alpha); nullopt
// when it can. A NULL form is plain SwiGLU without biases.
std::optional<std::string> check_expert_form(const strata_expert_form* form);

// Whether the form asks for anything beyond plain SwiGLU (a bias or another activation).
inline bool form_is_plain(const strata_expert_form* form) {
  return form == nullptr || (form->activation == STRATA_EXPERT_SWIGLU && form->gate_bias == nullptr &&
                             form->up_bias == nullptr && form->down_bias == nullptr);
}

// Expert `expert`'s rows of the form's biases, and its activation, into m (whose n_embd and n_ff are set).
void bind_expert_form(ExpertMatrices& m, const strata_expert_form* form, uint32_t expert);

}  // namespace strata::format
