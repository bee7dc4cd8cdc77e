// Reference weight quantizers against ggml's own output (tests/data/quant: <T>.src.f32 quantized by ggml
// into <T>.blocks, 8 rows of 256 values: rows 0-3 at one scale each, rows 4-7 mixing scales per 32 values).
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/quantize_weights.hpp"

namespace {

using strata::format::GgmlType;

std::vector<unsigned char> read_quant_file(const std::string& name) {
  const std::string path = std::string(STRATA_TEST_DATA) + "/quant/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> read_f32(const std::string& name) {
  const std::vector<unsigned char> bytes = read_quant_file(name);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// The data files are named by ggml's type name in upper case: "Q4_K.blocks".
std::string file_stem(GgmlType type) {
  std::string stem(strata::format::traits(type).name);
  for (char& c : stem) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return stem;
}

class QuantizeWeights : public testing::TestWithParam<GgmlType> {};

TEST_P(QuantizeWeights, MatchesGgmlBlocksByteForByte) {
  const GgmlType type = GetParam();
  const std::vector<float> src = read_f32(file_stem(type) + ".src.f32");
  const std::vector<unsigned char> want = read_quant_file(file_stem(type) + ".blocks");
  ASSERT_EQ(src.size(), 2048u);
  ASSERT_EQ(want.size(), strata::format::row_bytes(type, src.size()));
  ASSERT_TRUE(strata::format::has_quantize(type));

  std::vector<unsigned char> got(want.size());
  strata::format::quantize_row(type, src.data(), got.data(), static_cast<int64_t>(src.size()));
  const size_t block_bytes = strata::format::traits(type).block_bytes;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << file_stem(type) << " block " << i / block_bytes << " byte " << i % block_bytes
                               << " (value row " << i / block_bytes * strata::format::traits(type).block_elems / 256
                               << ")";
  }
}

TEST_P(QuantizeWeights, WritesToAnUnalignedBuffer) {
  const GgmlType type = GetParam();
  const std::vector<float> src = read_f32(file_stem(type) + ".src.f32");
  const std::vector<unsigned char> want = read_quant_file(file_stem(type) + ".blocks");
  std::vector<unsigned char> buffer(want.size() + 1);
  strata::format::quantize_row(type, src.data(), buffer.data() + 1, static_cast<int64_t>(src.size()));
  EXPECT_TRUE(std::equal(want.begin(), want.end(), buffer.begin() + 1));
}

TEST_P(QuantizeWeights, AllZeroRowWritesEveryByte) {
  // The zero-scale path (d = 0) must not divide by zero or leave bytes of the block unset: two buffers with
  // different garbage must come out the same.
  const GgmlType type = GetParam();
  const std::vector<float> src(512, 0.0f);
  std::vector<unsigned char> a(strata::format::row_bytes(type, src.size()), 0xAB);
  std::vector<unsigned char> b(a.size(), 0x54);
  strata::format::quantize_row(type, src.data(), a.data(), static_cast<int64_t>(src.size()));
  strata::format::quantize_row(type, src.data(), b.data(), static_cast<int64_t>(src.size()));
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeWeights,
                         testing::Values(GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K,
                                         GgmlType::Q6_K),
                         [](const testing::TestParamInfo<GgmlType>& param) { return file_stem(param.param); });

TEST(QuantizeWeightsErrors, RejectsTypesWithoutAQuantizer) {
  EXPECT_FALSE(strata::format::has_quantize(GgmlType::IQ2_XXS));
  EXPECT_FALSE(strata::format::has_quantize(GgmlType::Q8_K));
  std::vector<float> src(256, 1.0f);
  std::vector<unsigned char> out(1024);
  EXPECT_THROW(strata::format::quantize_row(GgmlType::IQ2_XXS, src.data(), out.data(), 256), strata::Error);
}

TEST(QuantizeWeightsErrors, RejectsPartialBlocks) {
  std::vector<float> src(300, 1.0f);
  std::vector<unsigned char> out(1024);
  EXPECT_THROW(strata::format::quantize_row(GgmlType::Q8_0, src.data(), out.data(), 33), strata::Error);
  EXPECT_THROW(strata::format::quantize_row(GgmlType::Q4_K, src.data(), out.data(), 288), strata::Error);
}


}  // namespace
