// The block-wide one-token dot (matvec_block.cuh) and the Q6_K realigned-word loads, run on the host: partials
// computed in any thread order and reduced by accumulator_chain plus the xor tree give format::canonical_dot's
// bits for every weight type; DecodeQ6_K::from_words on words realigned from 4-byte aligned loads (the device
// pass's path) gives the byte-load decoder's spans at both 2-byte alignments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "matvec_block.cuh"
#include "quant_decode.cuh"
#include "strata/format/canonical.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"

namespace strata::gpu {
namespace {

constexpr GgmlType kTypes[] = {
    GgmlType::Q4_0,    GgmlType::Q4_1,    GgmlType::Q5_0,  GgmlType::Q5_1,  GgmlType::Q8_0,   GgmlType::Q2_K,
    GgmlType::Q3_K,    GgmlType::Q4_K,    GgmlType::Q5_K,  GgmlType::Q6_K,  GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
    GgmlType::IQ2_S,   GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M,  GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,  GgmlType::MXFP4,   GgmlType::TQ1_0, GgmlType::TQ2_0};

std::vector<unsigned char> ggml_blocks(GgmlType type) {
  std::string name(format::traits(type).name);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/quant/" + name + ".blocks", std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open the " << name << " blocks";
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Several dots of one row (the row repeated), as the block computes them: every (dot, span) partial in a shuffled
// order into rows `pitch` floats apart, then the eight chains and the tree per dot.
template <class Dec>
float emulated_block_dot(const unsigned char* row, const unsigned char* act, int n_spans, uint32_t seed) {
  constexpr int kDots = 3;
  const int pitch = partial_pitch(n_spans);
  std::vector<float> part(static_cast<size_t>(kDots * pitch), NAN);
  std::vector<int> items(static_cast<size_t>(kDots * n_spans));
  std::iota(items.begin(), items.end(), 0);
  std::shuffle(items.begin(), items.end(), std::mt19937(seed));
  for (const int item : items) {
    const int d = item / n_spans, j = item % n_spans;
    Span sp;
    decode_row_span<Dec>(row, j, sp);
    uint32_t q[8];
    float da;
    load_q8_1(act, j, q, da);
    part[static_cast<size_t>(d * pitch + j)] = span_partial<Dec>(sp, q, da);
  }
  float dots[kDots];
  for (int d = 0; d < kDots; ++d) {
    float acc[kAccumulators];
    for (int r = 0; r < kAccumulators; ++r) acc[r] = accumulator_chain(part.data() + d * pitch, n_spans, r);
    for (int mask = 1; mask < kAccumulators; mask *= 2) {  // tree8's xor-shuffles
      float next[kAccumulators];
      for (int l = 0; l < kAccumulators; ++l) next[l] = acc[l] + acc[l ^ mask];
      std::memcpy(acc, next, sizeof acc);
    }
    dots[d] = acc[0];
  }
  EXPECT_EQ(format::f32_bits(dots[1]), format::f32_bits(dots[0]));
  EXPECT_EQ(format::f32_bits(dots[2]), format::f32_bits(dots[0]));
  return dots[0];
}

class BlockDot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(BlockDot, MatchesCanonicalDot) {
  with_decoder(static_cast<uint32_t>(GetParam()), [](auto dec) {
    using Dec = decltype(dec);
    const std::vector<unsigned char> data = ggml_blocks(Dec::kType);
    const int64_t n_blocks = static_cast<int64_t>(data.size() / Dec::kBytes);
    for (const int64_t blocks : {n_blocks, std::min<int64_t>(n_blocks, 3), int64_t{1}}) {
      const int64_t n = blocks * Dec::kElems;
      for (const float scale : {1.0f, 1e-3f, 50.0f}) {
        std::mt19937 rng(static_cast<uint32_t>(blocks) * 31u + static_cast<uint32_t>(Dec::kType));
        std::normal_distribution<float> dist(0.0f, scale);
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = dist(rng);
        std::vector<format::block_q8_1> xq(static_cast<size_t>(n / 32));
        format::quantize_row_q8_1(x.data(), xq.data(), n);
        const float ref = format::canonical_dot(Dec::kType, data.data(), xq.data(), n);
        const float got = emulated_block_dot<Dec>(data.data(), reinterpret_cast<const unsigned char*>(xq.data()),
                                                  static_cast<int>(n / 32), 5u);
        EXPECT_EQ(format::f32_bits(got), format::f32_bits(ref))
            << format::traits(Dec::kType).name << " " << blocks << " blocks, scale " << scale;
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(AllTypes, BlockDot, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(format::traits(info.param).name);
                         });

TEST(BlockDot, PartialPitchSpreadsGroupsOverBanks) {
  for (int n = 1; n <= 1024; ++n) {
    const int pitch = partial_pitch(n);
    ASSERT_GE(pitch, n);
    ASSERT_EQ(pitch % 32, 8) << n;
  }
}

// The device pass's load_words_a2 on the host: N + 1 aligned words from the buffer, realigned.
template <int N>
void words_at(const unsigned char* base, size_t offset, uint32_t (&out)[N]) {
  uint32_t a[N + 1];
  std::memcpy(a, base + (offset & ~size_t{3}), sizeof a);
  realign_words<N>(a, static_cast<int>(offset & 3u) * 8, out);
}

TEST(RealignWords, GivesTheUnalignedWords) {
  std::mt19937 rng(3);
  std::vector<unsigned char> buf(64);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  for (size_t off : {size_t{0}, size_t{2}, size_t{4}, size_t{6}, size_t{18}}) {
    uint32_t got[8], want[8];
    words_at(buf.data(), off, got);
    std::memcpy(want, buf.data() + off, sizeof want);
    for (int m = 0; m < 8; ++m) EXPECT_EQ(got[m], want[m]) << "offset " << off << " word " << m;
  }
}

// Every span of the blocks, placed at a 4-byte and at a 2-byte boundary: from_words on realigned words equals
// the byte-load decoder.
void expect_q6k_words_match(const std::vector<unsigned char>& blocks) {
  ASSERT_EQ(blocks.size() % DecodeQ6_K::kBytes, 0u);
  for (size_t shift : {size_t{0}, size_t{2}}) {
    std::vector<unsigned char> buf(blocks.size() + 8, 0);
    std::copy(blocks.begin(), blocks.end(), buf.begin() + static_cast<std::ptrdiff_t>(shift));
    for (size_t blk = 0; blk < blocks.size() / DecodeQ6_K::kBytes; ++blk) {
      const size_t at = shift + blk * DecodeQ6_K::kBytes;
      const uint8_t* b = buf.data() + at;
      for (int s = 0; s < 8; ++s) {
        const int half = s / 4, quarter = s % 4;
        uint32_t lw[8], hw[8];
        words_at(buf.data(), at + static_cast<size_t>(64 * half + 32 * (quarter % 2)), lw);
        words_at(buf.data(), at + static_cast<size_t>(128 + 32 * half), hw);
        uint16_t sc2, d;
        std::memcpy(&sc2, b + 192 + 2 * s, 2);
        std::memcpy(&d, b + 208, 2);
        Span want{}, got{};
        DecodeQ6_K::decode(b, s, want);
        DecodeQ6_K::from_words(lw, hw, sc2, d, s, got);
        for (int m = 0; m < 8; ++m) ASSERT_EQ(got.g[m], want.g[m]) << "block " << blk << " span " << s;
        for (int k = 0; k < 2; ++k) {
          ASSERT_EQ(format::f32_bits(got.c[k]), format::f32_bits(want.c[k])) << "block " << blk << " span " << s;
          ASSERT_EQ(format::f32_bits(got.b[k]), format::f32_bits(want.b[k])) << "block " << blk << " span " << s;
        }
      }
    }
  }
}

TEST(RealignWords, Q6KFromWordsMatchesByteLoadsOnGgmlBlocks) { expect_q6k_words_match(ggml_blocks(GgmlType::Q6_K)); }

TEST(RealignWords, Q6KFromWordsMatchesByteLoadsOnRandomBytes) {
  std::mt19937 rng(17);
  std::vector<unsigned char> data(DecodeQ6_K::kBytes * 512);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  expect_q6k_words_match(data);
}

}  // namespace
}  // namespace strata::gpu
