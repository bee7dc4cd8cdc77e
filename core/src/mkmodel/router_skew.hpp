// Expert popularity following 1/rank^S. The router has no bias, so popularity comes from the size of its rows:
// an expert whose row is longer gets larger-magnitude logits and lands in the top k more often. The row scale of
// each popularity rank is calibrated by sampling Gaussian hidden states through the real (unscaled) router rows.
// Zero-mean inputs make the logits symmetric, so no expert can be chosen for more than half of the tokens: wanted
// shares above that are capped and the rest spread over the other experts.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/mkmodel.hpp"

namespace strata::mkmodel {

struct RouterSkew {
  std::vector<float> scale_by_rank;  // row scale of the expert of each popularity rank
  RouterReport report;
};

// rows: n_expert rows of n_embd values (ggml's [n_embd, n_expert]), the unscaled router of one layer.
RouterSkew calibrate_router_skew(double exponent, uint32_t n_expert_used, uint32_t n_embd,
                                 const std::vector<float>& rows, uint64_t seed);

// Which expert holds each popularity rank in block `layer`: a seeded permutation, so that hot experts differ
// from layer to layer.
std::vector<uint32_t> experts_by_rank(uint64_t seed, uint32_t layer, uint32_t n_expert);

}  // namespace strata::mkmodel
