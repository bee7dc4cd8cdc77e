// Plain float types, MXFP4 (E2M1 values with a shared E8M0 exponent) and the ternary TQ1_0/TQ2_0.
#include <cstring>

#include "block_io.hpp"
#include "dequantize_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::kernels {
namespace {

// A TQ1_0 byte holds five base-3 digits as a fixed-point fraction q/256 ~ sum(digit_k * 3^-(k+1)) (rounded up);
// multiplying by 3^n brings digit n to the top, and (q * 3) >> 8 reads it out as 0, 1 or 2.
float ternary_digit(uint8_t packed, int n, float d) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(packed * kPow3[n]);
  const int digit = (q * 3) >> 8;
  return static_cast<float>(digit - 1) * d;
}

}  // namespace

void dequantize_f32(const void* blocks, float* out, int64_t nblocks) {
  std::memcpy(out, blocks, static_cast<size_t>(nblocks) * sizeof(float));
}

void dequantize_f16(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) out[i] = fp16_to_fp32(load_block<half_bits>(blocks, i));
}

void dequantize_bf16(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) out[i] = bf16_to_fp32(load_block<bf16_bits>(blocks, i));
}

void dequantize_mxfp4(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK_MXFP4) {
    const auto b = load_block<block_mxfp4>(blocks, i);
    const float d = e8m0_to_fp32_half(b.e);  // half, because kvalues_mxfp4 holds doubled E2M1 values
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
      out[j] = static_cast<float>(kvalues_mxfp4[b.qs[j] & 0x0f]) * d;
      out[j + QK_MXFP4 / 2] = static_cast<float>(kvalues_mxfp4[b.qs[j] >> 4]) * d;
    }
  }
}

void dequantize_tq1_0(const void* blocks, float* out, int64_t nblocks) {
  constexpr int kQs = sizeof(block_tq1_0::qs);  // 48: a 32-byte run, then a 16-byte run
  constexpr int kQh = sizeof(block_tq1_0::qh);  // 4
  constexpr int kLong = kQs - kQs % 32;
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_tq1_0>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    // Digit-major within each run: all bytes' digit 0, then all bytes' digit 1, ...
    for (int n = 0; n < 5; ++n) {
      for (int m = 0; m < kLong; ++m) *out++ = ternary_digit(b.qs[m], n, d);
    }
    for (int n = 0; n < 5; ++n) {
      for (int m = kLong; m < kQs; ++m) *out++ = ternary_digit(b.qs[m], n, d);
    }
    // qh bytes carry only four digits each.
    for (int n = 0; n < 4; ++n) {
      for (int m = 0; m < kQh; ++m) *out++ = ternary_digit(b.qh[m], n, d);
    }
  }
}

void dequantize_tq2_0(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_tq2_0>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    // Two runs of 32 bytes; within a run, the 2-bit fields at shift 0, 2, 4, 6 of every byte in turn.
    for (int run = 0; run < 2; ++run) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int m = 0; m < 32; ++m) {
          const int q = (b.qs[32 * run + m] >> shift) & 3;
          *out++ = static_cast<float>(q - 1) * d;
        }
      }
    }
  }
}

}  // namespace strata::format::kernels
