// Kernels of the ternary types TQ1_0 and TQ2_0 (values -1, 0, +1 times one f16 scale per 256 values), stored
// as u = g + 1 in 0..2. TQ2_0 unpacks with shifts; TQ1_0's base-3 digits are read out per byte.
#include "quant_matvec.hpp"
#include "strata/format/blocks.hpp"

namespace strata::cpu {
namespace {

using namespace format;

struct TQ2_0 {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_tq2_0), kBias = 1;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = false;
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Value 128r + 32s + m is bits 2s..2s+1 of qs[32r + m]: span 4r + s.
    const __m256i three = _mm256_set1_epi8(3);
    for (int r = 0; r < 2; ++r) {
      const __m256i q = load256(p + 32 * r);
      g.w[4 * r + 0] = _mm256_and_si256(q, three);
      g.w[4 * r + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 2), three);
      g.w[4 * r + 2] = _mm256_and_si256(_mm256_srli_epi16(q, 4), three);
      g.w[4 * r + 3] = _mm256_and_si256(_mm256_srli_epi16(q, 6), three);
    }
    g.c0 = f16_splat(p + 64);
  }
};

struct TQ1_0 {
  static constexpr int kBlockValues = 256, kBlockBytes = sizeof(block_tq1_0), kBias = 1;
  static constexpr bool kSigned = false, kTwoSub = false, kOffset = false;
  // Digit n of a byte holding five base-3 digits as a fraction of 256 (see format's dequantizer).
  static uint8_t digit(uint8_t packed, int n) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const auto q = static_cast<uint8_t>(packed * kPow3[n]);
    return static_cast<uint8_t>((q * 3) >> 8);
  }
  STRATA_INLINE_AVX2 static void decode(const unsigned char* p, int, Group& g) {
    // Digit-major runs: digit n of qs[0..32) (values 32n..), digit n of qs[32..48) (values 160 + 16n..),
    // then digit n of qh[0..4) (values 240 + 4n..).
    alignas(32) uint8_t u[256];
    int k = 0;
    for (int n = 0; n < 5; ++n) {
      for (int m = 0; m < 32; ++m) u[k++] = digit(p[m], n);
    }
    for (int n = 0; n < 5; ++n) {
      for (int m = 32; m < 48; ++m) u[k++] = digit(p[m], n);
    }
    for (int n = 0; n < 4; ++n) {
      for (int m = 48; m < 52; ++m) u[k++] = digit(p[m], n);
    }
    for (int s = 0; s < 8; ++s) g.w[s] = load256(u + 32 * s);
    g.c0 = f16_splat(p + 52);
  }
};

}  // namespace

void add_ternary_kernels(KernelTable& avx2, KernelTable& avx512) {
  add_quant_kernel<TQ1_0>(avx2, avx512, GgmlType::TQ1_0);
  add_quant_kernel<TQ2_0>(avx2, avx512, GgmlType::TQ2_0);
}

}  // namespace strata::cpu
