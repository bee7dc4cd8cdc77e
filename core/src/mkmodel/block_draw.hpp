// Random weights drawn directly in a block format, no float quantization: each block's scales are set and its
// quants drawn at random so that the decoded values are zero-mean (symmetric quants, or mins matched to the
// quants' mean) with a chosen root mean square. A block's bytes depend only on (seed, tensor, block index).
#pragma once

#include <cstdint>

#include "strata/format/types.hpp"

namespace strata::mkmodel {

using format::GgmlType;

// Elements per random stream for plain types (F32, F16, BF16); quantized types use one stream per block.
inline constexpr uint64_t kPlainGroup = 256;

// Whether draw_blocks can write `type`: F32, F16, BF16, Q4_0, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XS,
// IQ3_S, IQ4_NL, MXFP4 (every type of the presets and of llama.cpp's fallbacks for them).
bool can_draw(GgmlType type);

// Writes elements [first, first + count) of a tensor of `type` whose decoded values have root mean square `rms`.
// For quantized types first and count are whole blocks (multiples of the block size); the bytes go to `out`.
void draw_elements(GgmlType type, float rms, uint64_t seed, uint64_t tensor, uint64_t first, uint64_t count,
                   uint8_t* out);

// The root mean square of decoded values when a block's super-scale is 1 (measured once per type by decoding
// drawn blocks); draw_elements scales by rms / unit_rms.
double unit_rms(GgmlType type);

}  // namespace strata::mkmodel
