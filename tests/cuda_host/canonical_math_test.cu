// The plugin's exp_c / silu_c / swiglu_c (canonical_math.cuh), compiled by nvcc with --fmad=false, against the
// format library's definitions: every bit must match, over the whole finite range, its edges, NaN and inf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "canonical_math.cuh"
#include "strata/format/canonical.hpp"
#include "strata/format/fp16.hpp"

namespace {

using strata::format::f32_bits;
using strata::format::f32_from_bits;

// Inputs that exercise every branch of exp_c: the range limits and their neighbours, the subnormal-output
// and overflow-adjacent exponents, rounding ties of k, zeros, infinities, NaNs, plus a sweep of bit patterns.
std::vector<float> probe_values() {
  std::vector<float> v;
  const uint32_t edges[] = {0x42b17218u, 0xc2cff1b5u, 0x42b00000u, 0xc2aeac50u, 0xc2b00000u, 0xc2c80000u,
                            0x00000001u, 0x80000001u, 0x00800000u, 0x80800000u, 0x3f000000u, 0xbf000000u};
  for (uint32_t e : edges) {
    for (int d = -40; d <= 40; ++d) v.push_back(f32_from_bits(e + static_cast<uint32_t>(d)));
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            f32_from_bits(0x7fa00001u),
                            f32_from_bits(0xffc12345u),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max()};
  for (float s : specials) v.push_back(s);
  // k = rint(x * log2e) ties: x near (n + 0.5) * ln2 for a spread of n.
  for (int n = -150; n <= 128; ++n) {
    const float x = static_cast<float>((n + 0.5) * 0.6931471805599453);
    for (int d = -3; d <= 3; ++d) v.push_back(f32_from_bits(f32_bits(x) + static_cast<uint32_t>(d)));
  }
  // Every 4099th bit pattern: all exponents, both signs.
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) v.push_back(f32_from_bits(static_cast<uint32_t>(u)));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-110.0f, 95.0f);
  for (int i = 0; i < 200000; ++i) v.push_back(dist(rng));
  return v;
}

TEST(CudaCanonicalMath, ExpMatchesFormatLibraryBitForBit) {
  int64_t checked = 0;
  for (float x : probe_values()) {
    const uint32_t want = f32_bits(strata::format::exp_c(x));
    const uint32_t got = f32_bits(strata::gpu::exp_c(x));
    ASSERT_EQ(got, want) << "exp_c(" << x << ") bits 0x" << std::hex << f32_bits(x);
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

TEST(CudaCanonicalMath, ExpEdgesAreExact) {
  EXPECT_TRUE(std::isinf(strata::gpu::exp_c(f32_from_bits(0x42b17219u))));
  EXPECT_EQ(f32_bits(strata::gpu::exp_c(f32_from_bits(0xc2cff1b6u))), 0u);
  EXPECT_TRUE(std::isnan(strata::gpu::exp_c(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(strata::gpu::exp_c(0.0f), 1.0f);
  // Below the normal range the result is a nonzero subnormal (e^-100 is about 2^-144.3).
  const float tiny = strata::gpu::exp_c(-100.0f);
  EXPECT_GT(tiny, 0.0f);
  EXPECT_LT(tiny, std::numeric_limits<float>::min());
}

TEST(CudaCanonicalMath, SiluAndSwigluMatchFormatLibraryBitForBit) {
  const std::vector<float> xs = probe_values();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> du(-8.0f, 8.0f);
  for (float x : xs) {
    ASSERT_EQ(f32_bits(strata::gpu::silu_c(x)), f32_bits(strata::format::silu_c(x)))
        << "silu_c bits 0x" << std::hex << f32_bits(x);
    const float u = du(rng);
    ASSERT_EQ(f32_bits(strata::gpu::swiglu_c(x, u)), f32_bits(strata::format::swiglu_c(x, u)))
        << "swiglu_c bits 0x" << std::hex << f32_bits(x) << " u " << u;
  }
}

// The x86 NaN rules of add_x86 / mul_x86 / div_x86 against this (x86) host's own arithmetic: every pair of
// specials, NaNs with distinct payloads and signs included. volatile keeps the compiler from folding.
TEST(CudaCanonicalMath, X86NanRulesMatchHostArithmetic) {
  const float specials[] = {0.0f,
                            -0.0f,
                            1.5f,
                            -2.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            f32_from_bits(0xffc12345u),
                            f32_from_bits(0x7f812345u) /* signalling */,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min()};
  for (float a : specials) {
    for (float b : specials) {
      volatile float va = a, vb = b;
      const float sum = va + vb, prod = va * vb, quot = va / vb;
      EXPECT_EQ(f32_bits(strata::gpu::add_x86(a, b)), f32_bits(sum)) << std::hex << f32_bits(a) << " + " << f32_bits(b);
      EXPECT_EQ(f32_bits(strata::gpu::mul_x86(a, b)), f32_bits(prod))
          << std::hex << f32_bits(a) << " * " << f32_bits(b);
      EXPECT_EQ(f32_bits(strata::gpu::div_x86(a, b)), f32_bits(quot))
          << std::hex << f32_bits(a) << " / " << f32_bits(b);
    }
  }
}

// SwiGLU over pairs of specials in both operands: NaN payloads, infinities (-inf gate gives inf / inf), zeros.
TEST(CudaCanonicalMath, SwigluSpecialsMatchFormatLibrary) {
  const float specials[] = {0.0f,
                            -0.0f,
                            3.0f,
                            -3.0f,
                            100.0f,
                            -100.0f,
                            1e-40f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            f32_from_bits(0xffc12345u),
                            f32_from_bits(0x7fc0beefu)};
  for (float g : specials) {
    for (float u : specials) {
      EXPECT_EQ(f32_bits(strata::gpu::swiglu_c(g, u)), f32_bits(strata::format::swiglu_c(g, u)))
          << std::hex << "g 0x" << f32_bits(g) << " u 0x" << f32_bits(u);
    }
  }
}

}  // namespace
