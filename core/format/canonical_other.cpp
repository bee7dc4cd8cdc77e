// MXFP4 and the ternary formats decomposed: one scale per 32 values (MXFP4's halved E8M0 exponent, TQ's d for
// the whole super-block) and small integers, in the value order of dequantize_other.cpp.
#include "block_io.hpp"
#include "canonical_kernels.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::kernels {
namespace {

// Digit n of a TQ1_0 byte, 0..2 (the fixed-point reading explained in dequantize_other.cpp).
int ternary_digit(uint8_t packed, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(packed * kPow3[n]);
  return (q * 3) >> 8;
}

void same_scale_for_all_spans(CanonicalBlock& out, float d) {
  for (int k = 0; k < QK_K / 32; ++k) {
    out.c[k] = d;
    out.b[k] = 0.0f;
  }
}

}  // namespace

void decompose_mxfp4(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_mxfp4>(blocks, index);
  out.c[0] = e8m0_to_fp32_half(b.e);
  out.b[0] = 0.0f;
  for (int j = 0; j < QK_MXFP4 / 2; ++j) {
    out.g[j] = kvalues_mxfp4[b.qs[j] & 0x0f];
    out.g[j + QK_MXFP4 / 2] = kvalues_mxfp4[b.qs[j] >> 4];
  }
}

void decompose_tq1_0(const void* blocks, int64_t index, CanonicalBlock& out) {
  constexpr int kQs = sizeof(block_tq1_0::qs);
  constexpr int kQh = sizeof(block_tq1_0::qh);
  constexpr int kLong = kQs - kQs % 32;
  const auto b = load_block<block_tq1_0>(blocks, index);
  same_scale_for_all_spans(out, fp16_to_fp32(b.d));
  int32_t* g = out.g;
  for (int n = 0; n < 5; ++n) {
    for (int m = 0; m < kLong; ++m) *g++ = ternary_digit(b.qs[m], n) - 1;
  }
  for (int n = 0; n < 5; ++n) {
    for (int m = kLong; m < kQs; ++m) *g++ = ternary_digit(b.qs[m], n) - 1;
  }
  for (int n = 0; n < 4; ++n) {
    for (int m = 0; m < kQh; ++m) *g++ = ternary_digit(b.qh[m], n) - 1;
  }
}

void decompose_tq2_0(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_tq2_0>(blocks, index);
  same_scale_for_all_spans(out, fp16_to_fp32(b.d));
  int32_t* g = out.g;
  for (int run = 0; run < 2; ++run) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int m = 0; m < 32; ++m) *g++ = ((b.qs[32 * run + m] >> shift) & 3) - 1;
    }
  }
}

}  // namespace strata::format::kernels
