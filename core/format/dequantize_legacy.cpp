// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: one f16 scale (and for _1 an f16 offset) per 32 values. Nibble j of the
// low half of qs[j] is value j, the high nibble is value j + 16; Q5's fifth bits come from the 32-bit qh.
#include "block_io.hpp"
#include "block_scales.hpp"
#include "dequantize_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::kernels {

void dequantize_q4_0(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK4_0) {
    const auto b = load_block<block_q4_0>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const int lo = (b.qs[j] & 0x0f) - 8;
      const int hi = (b.qs[j] >> 4) - 8;
      out[j] = static_cast<float>(lo) * d;
      out[j + QK4_0 / 2] = static_cast<float>(hi) * d;
    }
  }
}

void dequantize_q4_1(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK4_1) {
    const auto b = load_block<block_q4_1>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      out[j] = static_cast<float>(b.qs[j] & 0x0f) * d + m;
      out[j + QK4_1 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK5_0) {
    const auto b = load_block<block_q5_0>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = q5_high_bits(b.qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const uint32_t hi_lo = ((qh >> j) & 1u) << 4;
      const uint32_t hi_hi = ((qh >> (j + QK5_0 / 2)) & 1u) << 4;
      const int lo = static_cast<int>((b.qs[j] & 0x0fu) | hi_lo) - 16;
      const int hi = static_cast<int>((b.qs[j] >> 4) | hi_hi) - 16;
      out[j] = static_cast<float>(lo) * d;
      out[j + QK5_0 / 2] = static_cast<float>(hi) * d;
    }
  }
}

void dequantize_q5_1(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK5_1) {
    const auto b = load_block<block_q5_1>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    const uint32_t qh = q5_high_bits(b.qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const uint32_t lo = (b.qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4);
      const uint32_t hi = (b.qs[j] >> 4) | (((qh >> (j + QK5_1 / 2)) & 1u) << 4);
      out[j] = static_cast<float>(lo) * d + m;
      out[j + QK5_1 / 2] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequantize_q8_0(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK8_0) {
    const auto b = load_block<block_q8_0>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK8_0; ++j) out[j] = static_cast<float>(b.qs[j]) * d;
  }
}

}  // namespace strata::format::kernels
