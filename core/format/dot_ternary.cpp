// Dot products of the ternary formats TQ1_0 / TQ2_0 with Q8_K activations, as ggml's
// ggml_vec_dot_tq{1,2}_0_q8_K_generic: an exact integer sum per super-block, then one float update.
#include "dot_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {
namespace {

// TQ1_0 packs 5 trits per byte as a base-3 fraction scaled to 0..255 (rounded up): multiplying by 3^k
// (mod 256) brings digit k to the top, and (byte * 3) >> 8 reads it as 0, 1 or 2.
int trit(uint8_t packed, int k) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto shifted = static_cast<uint8_t>(packed * kPow3[k]);
  return ((shifted * 3) >> 8) - 1;
}

// TQ1_0's qs: a run of 32 bytes with 5 trits each (values 0-159), then a run of 16 (values 160-239).
struct TritRun {
  int first, width;
};
constexpr TritRun kRuns[] = {{0, 32}, {32, 16}};

}  // namespace

float dot_tq1_0_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  constexpr int kQs = sizeof(block_tq1_0::qs);  // 48 bytes, see kRuns
  constexpr int kQh = sizeof(block_tq1_0::qh);  // 4 bytes with 4 trits each for values 240-255
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_tq1_0>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    int sumi = 0;
    // Digit k of byte m in a run of `width` bytes starting at byte `first` is value first * 5 + k * width + m.
    for (const TritRun& run : kRuns) {
      const int first = run.first, width = run.width;
      for (int k = 0; k < 5; ++k) {
        for (int m = 0; m < width; ++m) sumi += trit(x.qs[first + m], k) * y.qs[first * 5 + k * width + m];
      }
    }
    for (int k = 0; k < 4; ++k) {
      for (int m = 0; m < kQh; ++m) sumi += trit(x.qh[m], k) * y.qs[kQs * 5 + k * kQh + m];
    }
    sum += static_cast<float>(sumi) * (fp16_to_fp32(x.d) * y.d);
  }
  return sum;
}

float dot_tq2_0_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_tq2_0>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // Value 128h + 32k + m is bits 2k..2k+1 of qs[32h + m], stored as trit + 1.
    int sumi = 0;
    for (int p = 0; p < QK_K; ++p) {
      sumi += y.qs[p] * (((x.qs[32 * (p / 128) + p % 32] >> (2 * ((p / 32) % 4))) & 3) - 1);
    }
    sum += static_cast<float>(sumi) * (y.d * fp16_to_fp32(x.d));
  }
  return sum;
}

}  // namespace strata::format::detail
