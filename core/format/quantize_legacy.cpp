// Q4_0 and Q8_0: one scale per block of 32, as ggml's quantize_row_q4_0_ref / quantize_row_q8_0_ref.
#include <algorithm>
#include <cmath>

#include "quantize_kernels.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {

void quantize_block_q4_0(const float* x, block_q4_0& y) {
  // The value of largest magnitude maps to -8, the one level that has no positive twin, keeping its sign.
  float amax = 0;
  float max = 0;
  for (int j = 0; j < QK4_0; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  // x*id + 8.5 truncated is round-half-up into [0, 16]; 16 (the far end of the +max side) is clipped to 15.
  const auto level = [&](float v) { return static_cast<uint8_t>(std::min(15, static_cast<int>(v * id + 8.5f))); };
  for (int j = 0; j < QK4_0 / 2; ++j) {
    y.qs[j] = static_cast<uint8_t>(level(x[j]) | level(x[j + QK4_0 / 2]) << 4);
  }
}

void quantize_block_q8_0(const float* x, block_q8_0& y) {
  float amax = 0;
  for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  // roundf: ties away from zero, as ggml.
  for (int j = 0; j < QK8_0; ++j) y.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
}

}  // namespace strata::format::detail
