// One reference quantizer per weight type, one block at a time (internal to strata_format; quantize_weights.cpp
// loops over the blocks and copies each out, so callers' buffers need no alignment).
#pragma once

#include "strata/format/blocks.hpp"

namespace strata::format::detail {

void quantize_block_q4_0(const float* x, block_q4_0& y);  // 32 values
void quantize_block_q4_1(const float* x, block_q4_1& y);  // 32 values
void quantize_block_q5_0(const float* x, block_q5_0& y);  // 32 values
void quantize_block_q5_1(const float* x, block_q5_1& y);  // 32 values
void quantize_block_q2_k(const float* x, block_q2_K& y);  // 256 values
void quantize_block_q3_k(const float* x, block_q3_K& y);  // 256 values
void quantize_block_q4_k(const float* x, block_q4_K& y);  // 256 values
void quantize_block_q5_k(const float* x, block_q5_K& y);  // 256 values
void quantize_block_q6_k(const float* x, block_q6_K& y);  // 256 values

}  // namespace strata::format::detail
