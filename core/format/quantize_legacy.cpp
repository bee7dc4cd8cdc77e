// 32-value block formats, one scale per block, as ggml's quantize_row_<type>_ref (Q8_0: quantize_activation.cpp).
// Levels come from truncating x/d + offset + 0.5, i.e. rounding half up, as ggml does for these formats.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "quantize_kernels.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {
namespace {

// The value of largest magnitude with its sign (the first one on ties): symmetric formats map it to the one
// level that has no positive twin (-8 or -16).
float signed_absmax(const float* x) {
  float amax = 0;
  float max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

struct Range {
  float min, max;
};

Range value_range(const float* x) {
  Range r{FLT_MAX, -FLT_MAX};
  for (int j = 0; j < 32; ++j) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

// Value j's fifth bit goes to bit j of the block's 32-bit qh; the low four bits to qs as in Q4_0.
void pack_5bit(const uint8_t* levels, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((levels[j] & 0xF) | (levels[j + 16] & 0xF) << 4);
    qh |= static_cast<uint32_t>(levels[j] >> 4) << j;
    qh |= static_cast<uint32_t>(levels[j + 16] >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, sizeof qh);
}

}  // namespace

void quantize_block_q4_0(const float* x, block_q4_0& y) {
  const float d = signed_absmax(x) / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  // Levels 0..16; 16 (the far end of the side opposite the max) is clipped to 15.
  const auto level = [&](float v) { return static_cast<uint8_t>(std::min(15, static_cast<int>(v * id + 8.5f))); };
  for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(level(x[j]) | level(x[j + 16]) << 4);
}

void quantize_block_q4_1(const float* x, block_q4_1& y) {
  const Range r = value_range(x);
  const float d = (r.max - r.min) / 15;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(r.min);
  const auto level = [&](float v) {
    return static_cast<uint8_t>(std::min(15, static_cast<int>((v - r.min) * id + 0.5f)));
  };
  for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(level(x[j]) | level(x[j + 16]) << 4);
}

void quantize_block_q5_0(const float* x, block_q5_0& y) {
  const float d = signed_absmax(x) / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  uint8_t levels[32];
  for (int j = 0; j < 32; ++j) levels[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(x[j] * id + 16.5f)));
  pack_5bit(levels, y.qs, y.qh);
}

void quantize_block_q5_1(const float* x, block_q5_1& y) {
  const Range r = value_range(x);
  const float d = (r.max - r.min) / 31;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(r.min);
  // (max - min) * id + 0.5 stays below 32, so ggml needs (and has) no clip here.
  uint8_t levels[32];
  for (int j = 0; j < 32; ++j) levels[j] = static_cast<uint8_t>(static_cast<int>((x[j] - r.min) * id + 0.5f));
  pack_5bit(levels, y.qs, y.qh);
}

}  // namespace strata::format::detail
