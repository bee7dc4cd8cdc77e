// The activation quantizers against ggml's _ref output (tests/data/quant/act_*), byte for byte.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "quant_vectors.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"

namespace {

using strata::test::quant_dir;

// Quantizes <stem>.src.f32 with `quantize` and compares the bytes with <stem>.blocks.
template <class Block, class Quantize>
void expect_matches_ggml(const std::string& stem, Quantize quantize) {
  const std::vector<float> src = strata::test::read_f32(quant_dir() / (stem + ".src.f32"));
  const std::vector<uint8_t> want = strata::test::read_bytes(quant_dir() / (stem + ".blocks"));
  ASSERT_FALSE(src.empty());
  std::vector<uint8_t> got(want.size());
  quantize(src.data(), reinterpret_cast<Block*>(got.data()), static_cast<int64_t>(src.size()));
  EXPECT_EQ(strata::test::first_byte_difference(want, got, sizeof(Block)), "") << stem;
}

TEST(QuantizeActivation, Q8_0MatchesGgmlRef) {
  expect_matches_ggml<strata::format::block_q8_0>("act_Q8_0", strata::format::quantize_row_q8_0);
}

// ggml_quantize_chunk quantizes Q8_0 weights with the same _ref function: a second, independent input.
TEST(QuantizeActivation, Q8_0MatchesGgmlOnTheWeightVectors) {
  expect_matches_ggml<strata::format::block_q8_0>("Q8_0", strata::format::quantize_row_q8_0);
}

TEST(QuantizeActivation, Q8_1MatchesGgmlRef) {
  expect_matches_ggml<strata::format::block_q8_1>("act_Q8_1", strata::format::quantize_row_q8_1);
}

TEST(QuantizeActivation, Q8_KMatchesGgmlRef) {
  expect_matches_ggml<strata::format::block_q8_K>("act_Q8_K", strata::format::quantize_row_q8_K);
}

// Quantize then dequantize reproduces ggml's act_Q8_K.f32: the two halves agree with each other and with ggml.
TEST(QuantizeActivation, Q8_KRoundTripMatchesGgmlDequantized) {
  const std::vector<float> src = strata::test::read_f32(quant_dir() / "act_Q8_K.src.f32");
  const std::vector<float> want = strata::test::read_f32(quant_dir() / "act_Q8_K.f32");
  const auto n = static_cast<int64_t>(src.size());
  std::vector<uint8_t> blocks(static_cast<size_t>(n / strata::format::QK_K) * sizeof(strata::format::block_q8_K));
  strata::format::quantize_row_q8_K(src.data(), reinterpret_cast<strata::format::block_q8_K*>(blocks.data()), n);
  std::vector<float> got(src.size());
  strata::format::dequantize_row(strata::format::GgmlType::Q8_K, blocks.data(), got.data(), n);
  EXPECT_EQ(strata::test::first_float_difference(want, got), "");
}

// The random vectors never land exactly on .5, so the two rounding rules are pinned here: a block whose largest
// value is 127 has scale 1 (Q8_K: -1), so x.5 inputs reach the rounding step unchanged.
TEST(QuantizeActivation, Q8_0RoundsHalfAwayFromZeroAndQ8_KHalfToEven) {
  std::vector<float> x(strata::format::QK_K, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  strata::format::block_q8_0 q8_0{};
  strata::format::quantize_row_q8_0(x.data(), &q8_0, strata::format::QK8_0);
  EXPECT_EQ(strata::format::fp16_to_fp32(q8_0.d), 1.0f);
  EXPECT_EQ(q8_0.qs[1], 3);  // roundf
  EXPECT_EQ(q8_0.qs[2], -3);
  EXPECT_EQ(q8_0.qs[3], 4);

  strata::format::block_q8_K q8_K{};
  strata::format::quantize_row_q8_K(x.data(), &q8_K, strata::format::QK_K);
  EXPECT_EQ(q8_K.d, -1.0f);  // the largest value maps to -127
  EXPECT_EQ(q8_K.qs[0], -127);
  EXPECT_EQ(q8_K.qs[1], -2);  // nearest, ties to even
  EXPECT_EQ(q8_K.qs[2], 2);
  EXPECT_EQ(q8_K.qs[3], -4);
  EXPECT_EQ(q8_K.bsums[0], -127 - 2 + 2 - 4);
}

TEST(QuantizeActivation, RejectsPartialBlocks) {
  std::vector<float> x(512, 1.0f);
  std::vector<strata::format::block_q8_0> q8_0(16);
  std::vector<strata::format::block_q8_1> q8_1(16);
  std::vector<strata::format::block_q8_K> q8_K(2);
  EXPECT_THROW(strata::format::quantize_row_q8_0(x.data(), q8_0.data(), 40), std::invalid_argument);
  EXPECT_THROW(strata::format::quantize_row_q8_1(x.data(), q8_1.data(), 31), std::invalid_argument);
  EXPECT_THROW(strata::format::quantize_row_q8_K(x.data(), q8_K.data(), 288), std::invalid_argument);
  EXPECT_THROW(strata::format::quantize_row_q8_K(x.data(), q8_K.data(), -256), std::invalid_argument);
  EXPECT_NO_THROW(strata::format::quantize_row_q8_K(x.data(), q8_K.data(), 512));
}

}  // namespace
