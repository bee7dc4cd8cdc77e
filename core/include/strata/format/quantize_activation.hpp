// Activation quantizers, byte for byte those of ggml's reference path (quantize_row_q8_0_ref, _q8_1_ref,
// _q8_K_ref): the formats a row of activations is put in before a dot product with quantized weights.
#pragma once

#include <cstdint>

#include "strata/format/blocks.hpp"

namespace strata::format {

// Each quantizes n floats (a non-negative multiple of the block size: 32 for Q8_0/Q8_1, 256 for Q8_K) into
// n / block-size blocks; throws std::invalid_argument otherwise. y may be unaligned memory holding blocks.
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n);
void quantize_row_q8_1(const float* x, block_q8_1* y, int64_t n);
void quantize_row_q8_K(const float* x, block_q8_K* y, int64_t n);

}  // namespace strata::format
