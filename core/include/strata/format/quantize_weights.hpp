// Reference weight quantizers: float rows to ggml block formats, by ggml's own reference algorithms (the path
// ggml_quantize_chunk takes when it is given no importance matrix), every float operation in ggml's order, so
// that they reproduce ggml's blocks byte for byte; the K-quants run ggml's per-sub-block scale/min searches.
#pragma once

#include <cstdint>

#include "strata/format/types.hpp"

namespace strata::format {

// Whether quantize_row can write `type`: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool has_quantize(GgmlType type);

// Quantizes n finite floats into row_bytes(type, n) bytes at `blocks` (no alignment needed). Throws strata::Error when
// `type` has no quantizer or n is not a whole number of blocks.
void quantize_row(GgmlType type, const float* x, void* blocks, int64_t n);

}  // namespace strata::format
