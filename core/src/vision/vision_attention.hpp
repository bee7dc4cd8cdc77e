// The vision blocks' self-attention: 2-D RoPE on q and k, then full (non-causal) softmax attention per head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::vision::detail {

// qkv: n rows of [q (width) | k (width) | v (width)], heads of head_dim consecutive values. row/col: each
// patch's grid row and column. out: n rows of width values (the heads' outputs side by side).
void vision_attention(const float* qkv, size_t n, uint32_t n_head, uint32_t head_dim, const std::vector<int>& row,
                      const std::vector<int>& col, float* out, unsigned threads);

}  // namespace strata::vision::detail
