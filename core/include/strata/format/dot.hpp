// Reference dot products of a quantized weight row with a quantized activation row, one per weight type against
// ggml's vec_dot_type for it. They follow ggml's scalar `_generic` code step for step (exact integer sums per
// block or sub-block, then the float steps in ggml's order, no fused multiply-add), so that they reproduce its
// results bit for bit. The fast CPU and GPU kernels are checked against these.
#pragma once

#include <cstdint>

#include "strata/format/types.hpp"

namespace strata::format {

// Whether vec_dot supports `wtype` as the weight type.
bool has_vec_dot(GgmlType wtype);

// The activation format a weight type is multiplied with: Q8_K for the K-quants, the IQ types but IQ4_NL, and
// TQ1_0/TQ2_0; Q8_0 for Q4_0, Q5_0, Q8_0, IQ4_NL and MXFP4; Q8_1 for Q4_1 and Q5_1. Throws strata::Error for a
// type without a dot product.
GgmlType vec_dot_type(GgmlType wtype);

// Dot product of n values: `w` holds row_bytes(wtype, n) bytes of wtype blocks, `act` row_bytes(vec_dot_type(wtype),
// n) bytes of activation blocks; neither needs alignment. Throws strata::Error when wtype has no dot product or n is
// not a whole number of blocks of both formats.
float vec_dot(GgmlType wtype, const void* w, const void* act, int64_t n);

}  // namespace strata::format
