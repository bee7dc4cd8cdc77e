// Reference dequantization: ggml's to_float for every block type, bit for bit (same float operations in the
// same order, no contraction). Plain scalar code: it defines the right answer; fast kernels live in plugins.
#pragma once

#include <cstdint>

#include "strata/format/types.hpp"

namespace strata::format {

// Whether dequantize_row can decode `type` (false for Q8_1, which ggml cannot decode either, and the integer
// and f64 types).
bool has_dequantize(GgmlType type);

// Decodes n values from `blocks` (raw tensor bytes, any alignment) into out[0..n).
// Throws std::invalid_argument when `type` has no decoder or n is negative or not a multiple of its block size.
void dequantize_row(GgmlType type, const void* blocks, float* out, int64_t n);

}  // namespace strata::format
