// Which type each tensor gets under a quant preset. The llama.cpp presets follow its llama_tensor_get_type
// (src/llama-quant.cpp) as facts: the default type, the per-category changes, the attn_v / ffn_down layer rules
// and the fallbacks for rows that the chosen block size does not divide.
#pragma once

#include <vector>

#include "strata/arch.hpp"
#include "strata/mkmodel.hpp"

namespace strata::mkmodel {

// Types for `tensors` (in file order: the recipes count attn_v tensors as they come).
std::vector<format::GgmlType> choose_types(QuantPreset preset, const HParams& hp,
                                           const std::vector<TensorSpec>& tensors);

// llama.cpp's substitute when a row of ne0 values is not whole blocks of `type` (F16 as the last resort).
format::GgmlType fallback_type(format::GgmlType type, uint64_t ne0);

}  // namespace strata::mkmodel
