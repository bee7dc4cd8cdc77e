// The KV cache conversions of kv_convert.cuh (compiled by nvcc, --fmad=false) against the format library:
// every binary16 value both ways, float-to-half over all exponents and the rounding ties, Q8_0 blocks of
// random, tiny, huge and special values byte for byte with quantize_row_q8_0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kv_convert.cuh"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"

namespace {

using strata::format::f32_bits;
using strata::format::f32_from_bits;

TEST(CudaKvConvert, HalfToFloatEveryValue) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float want = strata::format::fp16_to_fp32(static_cast<uint16_t>(h));
    const float got = strata::gpu::f16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(f32_bits(got), f32_bits(want)) << "half 0x" << std::hex << h;
  }
}

TEST(CudaKvConvert, FloatToHalfMatchesFormatLibrary) {
  std::vector<uint32_t> bits;
  // Every 257th pattern covers all exponents and signs; the halfway points and their neighbours of every half
  // value exercise round-to-nearest-even (normal and subnormal halves, the carry into inf).
  for (uint64_t u = 0; u <= 0xffffffffull; u += 257) bits.push_back(static_cast<uint32_t>(u));
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float lo = strata::format::fp16_to_fp32(static_cast<uint16_t>(h));
    const float hi = strata::format::fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const double mid = (static_cast<double>(lo) + static_cast<double>(hi)) / 2.0;
    const uint32_t m = f32_bits(static_cast<float>(mid));
    for (uint32_t d = 0; d < 3; ++d) {
      bits.push_back(m - 1 + d);
      bits.push_back((m - 1 + d) | 0x80000000u);
    }
  }
  for (uint32_t b : bits) {
    const float f = f32_from_bits(b);
    ASSERT_EQ(strata::gpu::f32_to_f16_bits(f), strata::format::fp32_to_fp16(f)) << "float bits 0x" << std::hex << b;
  }
}

void expect_block_matches(const std::vector<float>& x) {
  strata::format::block_q8_0 want[1];
  strata::format::quantize_row_q8_0(x.data(), want, 32);
  uint16_t d = 0;
  int8_t qs[32];
  strata::gpu::quantize_block_q8_0(x.data(), &d, qs);
  ASSERT_EQ(d, want[0].d);
  ASSERT_EQ(std::memcmp(qs, want[0].qs, 32), 0);
}

TEST(CudaKvConvert, Q8_0BlocksMatchFormatLibrary) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-140, 120);
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<float> x(32);
    const float mag = std::ldexp(1.0f, ex(rng));  // tiny (subnormal scales) to huge (scales that overflow f16)
    for (float& v : x) v = nd(rng) * mag;
    if (iter % 7 == 0) x[static_cast<size_t>(iter % 32)] = 0.0f;
    expect_block_matches(x);
  }
  // Exact ties of x / d (values that are multiples of amax / 127 / 2), a zero block, and infinities.
  std::vector<float> ties(32);
  for (int j = 0; j < 32; ++j) ties[static_cast<size_t>(j)] = static_cast<float>(j - 16) * 0.5f * (127.0f / 127.0f);
  ties[31] = 127.0f;
  expect_block_matches(ties);
  expect_block_matches(std::vector<float>(32, 0.0f));
  std::vector<float> inf(32, 1.0f);
  inf[5] = std::numeric_limits<float>::infinity();
  inf[9] = -std::numeric_limits<float>::infinity();
  expect_block_matches(inf);
}

}  // namespace
