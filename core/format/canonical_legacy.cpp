// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 decomposed: c = d, g = the stored integer (minus the type's zero point), and for
// the _1 types b = m. Value order as in dequantize_legacy.cpp: low nibbles are values 0-15, high ones 16-31.
#include "block_io.hpp"
#include "block_scales.hpp"
#include "canonical_kernels.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::kernels {

void decompose_q4_0(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q4_0>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = 0.0f;
  for (int j = 0; j < QK4_0 / 2; ++j) {
    out.g[j] = (b.qs[j] & 0x0f) - 8;
    out.g[j + QK4_0 / 2] = (b.qs[j] >> 4) - 8;
  }
}

void decompose_q4_1(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q4_1>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = fp16_to_fp32(b.m);
  for (int j = 0; j < QK4_1 / 2; ++j) {
    out.g[j] = b.qs[j] & 0x0f;
    out.g[j + QK4_1 / 2] = b.qs[j] >> 4;
  }
}

void decompose_q5_0(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q5_0>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = 0.0f;
  const uint32_t qh = q5_high_bits(b.qh);
  for (int j = 0; j < QK5_0 / 2; ++j) {
    const uint32_t hi_lo = ((qh >> j) & 1u) << 4;
    const uint32_t hi_hi = ((qh >> (j + QK5_0 / 2)) & 1u) << 4;
    out.g[j] = static_cast<int32_t>((b.qs[j] & 0x0fu) | hi_lo) - 16;
    out.g[j + QK5_0 / 2] = static_cast<int32_t>((b.qs[j] >> 4) | hi_hi) - 16;
  }
}

void decompose_q5_1(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q5_1>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = fp16_to_fp32(b.m);
  const uint32_t qh = q5_high_bits(b.qh);
  for (int j = 0; j < QK5_1 / 2; ++j) {
    out.g[j] = static_cast<int32_t>((b.qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4));
    out.g[j + QK5_1 / 2] = static_cast<int32_t>((b.qs[j] >> 4) | (((qh >> (j + QK5_1 / 2)) & 1u) << 4));
  }
}

void decompose_q8_0(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q8_0>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = 0.0f;
  for (int j = 0; j < QK8_0; ++j) out.g[j] = b.qs[j];
}

}  // namespace strata::format::kernels
