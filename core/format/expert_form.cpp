// strata_expert_form: checked once here for every backend; bound per expert for the canonical row.
#include "strata/format/expert_form.hpp"

#include <cmath>

namespace strata::format {

std::optional<std::string> check_expert_form(const strata_expert_form* form) {
  if (form == nullptr) return std::nullopt;
  if (form->activation == STRATA_EXPERT_SWIGLU) return std::nullopt;
  if (form->activation != STRATA_EXPERT_SWIGLU_OAI) {
    return "expert form: activation " + std::to_string(form->activation) + " is not 0 (SwiGLU) or 1 (SwiGLU-OAI)";
  }
  if (!(form->limit > 0.0f) || !std::isfinite(form->limit) || !std::isfinite(form->alpha)) {
    return "expert form: SwiGLU-OAI needs a finite alpha and a positive finite limit (gpt-oss: 1.702 and 7), not " +
           std::to_string(form->alpha) + " and " + std::to_string(form->limit);
  }
  return std::nullopt;
}

void bind_expert_form(ExpertMatrices& m, const strata_expert_form* form, uint32_t expert) {
  if (form == nullptr) return;
  const auto ff = static_cast<size_t>(m.n_ff) * expert;
  const auto embd = static_cast<size_t>(m.n_embd) * expert;
  m.gate_bias = form->gate_bias != nullptr ? form->gate_bias + ff : nullptr;
  m.up_bias = form->up_bias != nullptr ? form->up_bias + ff : nullptr;
  m.down_bias = form->down_bias != nullptr ? form->down_bias + embd : nullptr;
  m.activation = form->activation;
  m.alpha = form->alpha;
  m.limit = form->limit;
}

}  // namespace strata::format
