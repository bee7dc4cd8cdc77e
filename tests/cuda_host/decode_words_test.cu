// The 16-byte-load path of the Q4_K decoder (DecodeQ4_K::from_words, scale_min_k4_words) against the byte-load
// path the host pass runs (DecodeQ4_K::decode): same integers, same scale and offset bits, on ggml's blocks and
// on random bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "quant_decode.cuh"
#include "strata/format/fp16.hpp"

namespace strata::gpu {
namespace {

std::vector<unsigned char> q4k_blocks_from_ggml() {
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/quant/Q4_K.blocks", std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open tests/data/quant/Q4_K.blocks";
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_same_spans(const std::vector<unsigned char>& data) {
  ASSERT_EQ(data.size() % DecodeQ4_K::kBytes, 0u);
  for (size_t blk = 0; blk < data.size() / DecodeQ4_K::kBytes; ++blk) {
    const uint8_t* b = data.data() + blk * DecodeQ4_K::kBytes;
    uint32_t h[4];
    std::memcpy(h, b, sizeof h);
    for (int s = 0; s < 8; ++s) {
      uint32_t qw[8];
      std::memcpy(qw, b + 16 + 32 * (s / 2), sizeof qw);
      Span want{}, got{};
      DecodeQ4_K::decode(b, s, want);
      DecodeQ4_K::from_words(h, qw, s, got);
      for (int m = 0; m < 8; ++m) ASSERT_EQ(got.g[m], want.g[m]) << "block " << blk << " span " << s << " word " << m;
      ASSERT_EQ(format::f32_bits(got.c[0]), format::f32_bits(want.c[0])) << "block " << blk << " span " << s;
      ASSERT_EQ(format::f32_bits(got.b[0]), format::f32_bits(want.b[0])) << "block " << blk << " span " << s;
    }
  }
}

TEST(CudaDecodeWords, Q4KFromWordsMatchesByteLoadsOnGgmlBlocks) { expect_same_spans(q4k_blocks_from_ggml()); }

TEST(CudaDecodeWords, Q4KFromWordsMatchesByteLoadsOnRandomBytes) {
  std::mt19937 rng(7);
  std::vector<unsigned char> data(DecodeQ4_K::kBytes * 4096);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  expect_same_spans(data);
}

TEST(CudaDecodeWords, ScaleMinFromWordsCoversEveryByteValue) {
  // Every value in every scale byte position, the other bytes random.
  std::mt19937 rng(11);
  for (int pos = 0; pos < 12; ++pos) {
    for (int v = 0; v < 256; ++v) {
      uint8_t sc[12];
      for (auto& b : sc) b = static_cast<uint8_t>(rng());
      sc[pos] = static_cast<uint8_t>(v);
      uint32_t w[3];
      std::memcpy(w, sc, sizeof w);
      for (int j = 0; j < 8; ++j) {
        uint32_t s0, m0, s1, m1;
        scale_min_k4(sc, j, s0, m0);
        scale_min_k4_words(w[0], w[1], w[2], j, s1, m1);
        ASSERT_EQ(s1, s0) << "byte " << pos << " = " << v << ", sub-block " << j;
        ASSERT_EQ(m1, m0) << "byte " << pos << " = " << v << ", sub-block " << j;
      }
    }
  }
}

}  // namespace
}  // namespace strata::gpu
