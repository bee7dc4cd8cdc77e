// MUL_MAT with quantized weights for one token or a window of up to kMaxWindowTokens (a verify window, a short
// prompt's last piece) as block-wide canonical dots (matvec_block.cuh), for one matrix or for a group of up to
// three consecutive MUL_MATs that read the same activation rows (q, k and v read the normed x): one launch over the
// concatenated rows, the Q8_1 rows quantized once, each weight span decoded once for all the window's tokens.
#pragma once

#include <cstdint>

#include "context.hpp"
#include "ops.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

constexpr int kMaxGroupMats = 3;
constexpr int kMaxWindowTokens = 8;  // windows of 2..8 tokens take the block kernels too (from 9 the tiled products)

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
  int64_t dst_stride[kMaxGroupMats];  // floats between two tokens' outputs (windows)
};

// Enqueues the group's dots against the Q8_1 rows of n_tok tokens (act + t * act_stride, n_spans blocks each,
// 4-byte aligned; dst[m] + t * dst_stride[m] the outputs of token t) and returns true, or returns false without
// enqueuing anything when the group is not one this path takes (types that differ other than Q4_K with Q6_K, a
// type without a decoder, rows too long for the block's shared memory, more than kMaxWindowTokens tokens).
bool launch_mul_mat_rows(Context& ctx, const RowGroup& group, int n_spans, const unsigned char* act, int n_tok = 1,
                         uint64_t act_stride = 0);

// The fusion (fusions.cu): two or three MUL_MATs of up to kMaxWindowTokens tokens in a row over the same src1 as
// one launch, with the in-place ADDs of one-row biases to their outputs that follow them (q, k and v's biases:
// glm4moe, gpt-oss, qwen2moe) added as each dot is stored.
size_t fuse_mul_mat_group(Context& ctx, const strata_op* ops, size_t i, size_t n);

}  // namespace strata::gpu
