// Every decoder against ggml's own to_float output (tests/data/quant): bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant_vectors.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/types.hpp"

namespace {

using strata::format::GgmlType;
using strata::test::quant_dir;

struct VectorCase {
  GgmlType type;
  std::string stem;  // <stem>.blocks decodes to <stem>.f32
};

// The vectors this suite decodes: every weight type of the data set, plus the activation formats ggml can decode.
const std::vector<VectorCase>& covered_cases() {
  static const std::vector<VectorCase> cases = {
      {GgmlType::F16, "F16"},         {GgmlType::BF16, "BF16"},       {GgmlType::Q4_0, "Q4_0"},
      {GgmlType::Q4_1, "Q4_1"},       {GgmlType::Q5_0, "Q5_0"},       {GgmlType::Q5_1, "Q5_1"},
      {GgmlType::Q8_0, "Q8_0"},       {GgmlType::Q2_K, "Q2_K"},       {GgmlType::Q3_K, "Q3_K"},
      {GgmlType::Q4_K, "Q4_K"},       {GgmlType::Q5_K, "Q5_K"},       {GgmlType::Q6_K, "Q6_K"},
      {GgmlType::IQ2_XXS, "IQ2_XXS"}, {GgmlType::IQ2_XS, "IQ2_XS"},   {GgmlType::IQ2_S, "IQ2_S"},
      {GgmlType::IQ3_XXS, "IQ3_XXS"}, {GgmlType::IQ3_S, "IQ3_S"},     {GgmlType::IQ1_S, "IQ1_S"},
      {GgmlType::IQ1_M, "IQ1_M"},     {GgmlType::IQ4_NL, "IQ4_NL"},   {GgmlType::IQ4_XS, "IQ4_XS"},
      {GgmlType::MXFP4, "MXFP4"},     {GgmlType::TQ1_0, "TQ1_0"},     {GgmlType::TQ2_0, "TQ2_0"},
      {GgmlType::Q8_0, "act_Q8_0"},   {GgmlType::Q8_K, "act_Q8_K"},
  };
  return cases;
}

void PrintTo(const VectorCase& c, std::ostream* os) { *os << c.stem; }

class DequantizeVectors : public testing::TestWithParam<VectorCase> {};

TEST_P(DequantizeVectors, MatchesGgmlBitForBit) {
  const VectorCase& c = GetParam();
  const std::vector<uint8_t> blocks = strata::test::read_bytes(quant_dir() / (c.stem + ".blocks"));
  const std::vector<float> want = strata::test::read_f32(quant_dir() / (c.stem + ".f32"));
  const auto& tr = strata::format::traits(c.type);
  ASSERT_EQ(blocks.size() % tr.block_bytes, 0u) << c.stem << ".blocks is not a whole number of blocks";
  const auto n = static_cast<int64_t>(blocks.size() / tr.block_bytes * tr.block_elems);
  ASSERT_EQ(static_cast<size_t>(n), want.size()) << c.stem << ".f32 holds a different number of values";

  std::vector<float> got(want.size());
  strata::format::dequantize_row(c.type, blocks.data(), got.data(), n);
  EXPECT_EQ(strata::test::first_float_difference(want, got), "") << c.stem;
}

// Tensor data in a GGUF can start at any byte; decoding from an odd address must give the same floats.
TEST_P(DequantizeVectors, DecodesFromUnalignedMemory) {
  const VectorCase& c = GetParam();
  const std::vector<uint8_t> blocks = strata::test::read_bytes(quant_dir() / (c.stem + ".blocks"));
  const std::vector<float> want = strata::test::read_f32(quant_dir() / (c.stem + ".f32"));
  std::vector<uint8_t> shifted(blocks.size() + 1);
  std::copy(blocks.begin(), blocks.end(), shifted.begin() + 1);
  std::vector<float> got(want.size());
  strata::format::dequantize_row(c.type, shifted.data() + 1, got.data(), static_cast<int64_t>(want.size()));
  EXPECT_EQ(strata::test::first_float_difference(want, got), "") << c.stem;
}

INSTANTIATE_TEST_SUITE_P(Ggml, DequantizeVectors, testing::ValuesIn(covered_cases()),
                         [](const testing::TestParamInfo<VectorCase>& p) { return p.param.stem; });

// index.tsv is the data set's own list: every non-extra row that ggml can decode must be covered above, under
// the same type id and block geometry.
TEST(DequantizeCoverage, CoversEveryDecodableTypeInTheIndex) {
  ASSERT_FALSE(covered_cases().empty());
  const auto rows = strata::test::read_tsv(quant_dir() / "index.tsv");
  ASSERT_GT(rows.size(), 1u);
  const auto& header = rows[0];
  auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw std::runtime_error("index.tsv has no column " + name);
    return static_cast<size_t>(it - header.begin());
  };
  const size_t c_type = column("type"), c_id = column("ggml_type_id"), c_elems = column("block_elems");
  const size_t c_bytes = column("block_bytes"), c_file = column("blocks_file"), c_deq = column("dequantizer");
  const size_t c_extra = column("extra");

  size_t checked = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    ASSERT_GT(row.size(), c_extra) << "index.tsv line " << r + 1;
    if (row[c_extra] != "0" || row[c_deq] == "-") continue;
    const std::string stem = row[c_file].substr(0, row[c_file].rfind(".blocks"));
    const auto it = std::find_if(covered_cases().begin(), covered_cases().end(),
                                 [&](const VectorCase& c) { return c.stem == stem; });
    ASSERT_NE(it, covered_cases().end()) << row[c_type] << " (" << stem << ") has vectors but no test case";
    const auto& tr = strata::format::traits(it->type);
    EXPECT_EQ(static_cast<uint32_t>(it->type), std::stoul(row[c_id])) << stem;
    EXPECT_EQ(tr.block_elems, std::stoul(row[c_elems])) << stem;
    EXPECT_EQ(tr.block_bytes, std::stoul(row[c_bytes])) << stem;
    EXPECT_TRUE(strata::format::has_dequantize(it->type)) << stem;
    ++checked;
  }
  EXPECT_EQ(checked, covered_cases().size()) << "a covered case has no row in index.tsv";
}

// The README names the weight types in prose ("`<T>` is one of the weight types: Q4_0, ..., BF16 and F16.").
TEST(DequantizeCoverage, CoversEveryWeightTypeTheReadmeLists) {
  const std::string readme = strata::test::read_text(quant_dir() / "README.md");
  const std::string lead = "is one of the weight types:";
  const size_t start = readme.find(lead);
  ASSERT_NE(start, std::string::npos) << "README.md no longer lists the weight types in the expected sentence";
  const size_t end = readme.find('.', start);
  std::string list = readme.substr(start + lead.size(), end - start - lead.size());
  for (char& ch : list) {
    if (ch == ',' || ch == '\n') ch = ' ';
  }
  std::set<std::string> names;
  std::istringstream words(list);
  for (std::string w; words >> w;) {
    if (w != "and") names.insert(w);
  }
  ASSERT_GE(names.size(), 20u) << "parsed too few type names from README.md: " << list;
  for (const std::string& name : names) {
    const bool covered = std::any_of(covered_cases().begin(), covered_cases().end(),
                                     [&](const VectorCase& c) { return c.stem == name; });
    EXPECT_TRUE(covered) << "README.md lists weight type " << name << " but no test decodes it";
  }
}

TEST(Dequantize, F32IsACopy) {
  const std::vector<float> src = strata::test::read_f32(quant_dir() / "Q4_K.src.f32");
  std::vector<float> got(src.size());
  strata::format::dequantize_row(GgmlType::F32, src.data(), got.data(), static_cast<int64_t>(src.size()));
  EXPECT_EQ(strata::test::first_float_difference(src, got), "");
}

TEST(Dequantize, RejectsPartialBlocks) {
  std::vector<uint8_t> blocks(2 * 144);
  std::vector<float> out(512);
  EXPECT_THROW(strata::format::dequantize_row(GgmlType::Q4_K, blocks.data(), out.data(), 300), std::invalid_argument);
  EXPECT_THROW(strata::format::dequantize_row(GgmlType::Q4_0, blocks.data(), out.data(), 33), std::invalid_argument);
  EXPECT_THROW(strata::format::dequantize_row(GgmlType::Q8_0, blocks.data(), out.data(), -32), std::invalid_argument);
  EXPECT_NO_THROW(strata::format::dequantize_row(GgmlType::Q4_K, blocks.data(), out.data(), 512));
  EXPECT_NO_THROW(strata::format::dequantize_row(GgmlType::Q4_K, blocks.data(), out.data(), 0));
}

TEST(Dequantize, RejectsTypesWithoutDecoder) {
  EXPECT_FALSE(strata::format::has_dequantize(GgmlType::Q8_1));
  EXPECT_FALSE(strata::format::has_dequantize(GgmlType::I32));
  EXPECT_TRUE(strata::format::has_dequantize(GgmlType::Q8_K));
  std::vector<uint8_t> blocks(36);
  std::vector<float> out(32);
  EXPECT_THROW(strata::format::dequantize_row(GgmlType::Q8_1, blocks.data(), out.data(), 32), std::invalid_argument);
}

}  // namespace
