// One-token MUL_MAT with quantized weights as block-wide canonical dots (matvec_block.cuh), for one matrix or for
// a group of up to three consecutive MUL_MATs that read the same activation row (q, k and v read the normed x):
// one launch over the concatenated rows, the Q8_1 row quantized once.
#pragma once

#include <cstdint>

#include "context.hpp"
#include "ops.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

constexpr int kMaxGroupMats = 3;

// Matrices that share one Q8_1 activation row of n_spans blocks; dst[m] receives rows[m] floats, each the dot plus
// bias[m]'s value of its row where bias[m] is set (the ADD of a bias that follows the product in place, one float
// addition: the bits of the two ops one after the other).
struct RowGroup {
  const uint8_t* w[kMaxGroupMats];
  uint64_t stride[kMaxGroupMats];
  int rows[kMaxGroupMats];
  uint32_t type[kMaxGroupMats];
  float* dst[kMaxGroupMats];
  int n;
  const float* bias[kMaxGroupMats];
};

// Enqueues the group's dots against the Q8_1 row `act` (n_spans blocks, 4-byte aligned) and returns true, or
// returns false without enqueuing anything when the group is not one this path takes (types that differ other
// than Q4_K with Q6_K, a type without a decoder, rows too long for the block's shared memory).
bool launch_mul_mat_rows(Context& ctx, const RowGroup& group, int n_spans, const unsigned char* act);

// The fusion (fusions.cu): two or three one-token MUL_MATs in a row over the same src1 as one launch, with the
// in-place ADDs of one-row biases to their outputs that follow them (q, k and v's biases: glm4moe, gpt-oss,
// qwen2moe) added as each dot is stored.
size_t fuse_mul_mat_group(Context& ctx, const strata_op* ops, size_t i, size_t n);

}  // namespace strata::gpu
