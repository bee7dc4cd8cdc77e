// Reference dot products against ggml's: tests/data/quant/dot_<T>.tsv holds 32 dot products of <T>.blocks with
// act_<A>.blocks, each as ggml's scalar `_generic` function computed it in a build without FMA contraction
// (`generic_hex`, the bit-exact target) and as a double-precision sum of the decoded values (`ref_f64`).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/dot.hpp"
#include "strata/format/fp16.hpp"

namespace {

using strata::format::GgmlType;

const std::string kQuantDir = std::string(STRATA_TEST_DATA) + "/quant/";

std::vector<unsigned char> read_quant_file(const std::string& name) {
  std::ifstream in(kQuantDir + name, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << kQuantDir + name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string type_file_name(GgmlType type) { return upper(strata::format::traits(type).name); }

struct DotRow {
  int row;
  int64_t n, w_off, a_off;
  std::string act_type;
  uint32_t generic_bits;
  double ref_f64;
  std::string text;  // the row as written, for failure messages
};

std::vector<DotRow> read_dot_rows(const std::string& name) {
  std::ifstream in(kQuantDir + name);
  EXPECT_TRUE(in) << "cannot open " << kQuantDir + name;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("row\tn\tw_off\ta_off\tact_type\tgeneric\tgeneric_hex\tref_f64", 0), 0u) << name << ": " << line;
  std::vector<DotRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    DotRow r;
    std::string generic, hex;
    fields >> r.row >> r.n >> r.w_off >> r.a_off >> r.act_type >> generic >> hex >> r.ref_f64;
    EXPECT_TRUE(fields) << name << ": cannot parse " << line;
    r.generic_bits = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
    r.text = line;
    rows.push_back(r);
  }
  return rows;
}

std::string hex_bits(float f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", strata::format::f32_bits(f));
  return buf;
}

// The types that have dot_<T>.tsv files but no GgmlType here: extras of the data set's ggml revision that the
// engine does not read (README "Three further types ... are included as extras").
const std::set<std::string> kExtraTypes = {"NVFP4", "Q1_0", "Q2_0"};

const GgmlType kDotTypes[] = {GgmlType::Q4_0,   GgmlType::Q4_1,    GgmlType::Q5_0,   GgmlType::Q5_1,
                              GgmlType::Q8_0,   GgmlType::Q2_K,    GgmlType::Q3_K,   GgmlType::Q4_K,
                              GgmlType::Q5_K,   GgmlType::Q6_K,    GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
                              GgmlType::IQ2_S,  GgmlType::IQ3_XXS, GgmlType::IQ3_S,  GgmlType::IQ1_S,
                              GgmlType::IQ1_M,  GgmlType::IQ4_NL,  GgmlType::IQ4_XS, GgmlType::TQ1_0,
                              GgmlType::TQ2_0,  GgmlType::MXFP4};

class VecDot : public testing::TestWithParam<GgmlType> {};

TEST_P(VecDot, MatchesGgmlGenericBitForBit) {
  const GgmlType wtype = GetParam();
  ASSERT_TRUE(strata::format::has_vec_dot(wtype));
  const GgmlType atype = strata::format::vec_dot_type(wtype);
  const auto& wt = strata::format::traits(wtype);
  const auto& at = strata::format::traits(atype);
  const std::vector<unsigned char> weights = read_quant_file(type_file_name(wtype) + ".blocks");
  const std::vector<unsigned char> acts = read_quant_file("act_" + type_file_name(atype) + ".blocks");
  const std::vector<DotRow> rows = read_dot_rows("dot_" + type_file_name(wtype) + ".tsv");
  ASSERT_EQ(rows.size(), 32u);

  for (const DotRow& r : rows) {
    ASSERT_EQ(r.act_type, type_file_name(atype)) << "row " << r.row;
    const uint64_t w_at = static_cast<uint64_t>(r.w_off) / wt.block_elems * wt.block_bytes;
    const uint64_t a_at = static_cast<uint64_t>(r.a_off) / at.block_elems * at.block_bytes;
    ASSERT_LE(w_at + strata::format::row_bytes(wtype, r.n), weights.size()) << "row " << r.row;
    ASSERT_LE(a_at + strata::format::row_bytes(atype, r.n), acts.size()) << "row " << r.row;
    const float got = strata::format::vec_dot(wtype, weights.data() + w_at, acts.data() + a_at, r.n);
    EXPECT_EQ(strata::format::f32_bits(got), r.generic_bits)
        << type_file_name(wtype) << " row: " << r.text << "\n  got " << hex_bits(got) << " (" << got << "), expected "
        << hex_bits(strata::format::f32_from_bits(r.generic_bits)) << ", ref_f64 " << r.ref_f64;
  }
}

TEST_P(VecDot, ReadsUnalignedBlocks) {
  const GgmlType wtype = GetParam();
  const GgmlType atype = strata::format::vec_dot_type(wtype);
  const std::vector<unsigned char> weights = read_quant_file(type_file_name(wtype) + ".blocks");
  const std::vector<unsigned char> acts = read_quant_file("act_" + type_file_name(atype) + ".blocks");
  const int64_t n = 512;
  const float aligned = strata::format::vec_dot(wtype, weights.data(), acts.data(), n);
  std::vector<unsigned char> w1(strata::format::row_bytes(wtype, n) + 1), a1(strata::format::row_bytes(atype, n) + 3);
  std::memcpy(w1.data() + 1, weights.data(), w1.size() - 1);
  std::memcpy(a1.data() + 3, acts.data(), a1.size() - 3);
  const float unaligned = strata::format::vec_dot(wtype, w1.data() + 1, a1.data() + 3, n);
  EXPECT_EQ(strata::format::f32_bits(unaligned), strata::format::f32_bits(aligned));
}

INSTANTIATE_TEST_SUITE_P(Types, VecDot, testing::ValuesIn(kDotTypes),
                         [](const testing::TestParamInfo<GgmlType>& param) { return type_file_name(param.param); });

TEST(VecDotCoverage, EveryDotFileIsTestedOrAKnownExtra) {
  std::set<std::string> tested;
  for (GgmlType t : kDotTypes) tested.insert(type_file_name(t));
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kQuantDir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dot_", 0) != 0 || entry.path().extension() != ".tsv") continue;
    ++files;
    const std::string type = name.substr(4, name.size() - 8);
    EXPECT_TRUE(tested.count(type) == 1 || kExtraTypes.count(type) == 1) << name << " is not checked by any test";
  }
  EXPECT_EQ(files, 25);
}

TEST(VecDotTypes, FollowGgml) {
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::Q4_K), GgmlType::Q8_K);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::IQ2_XS), GgmlType::Q8_K);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::TQ1_0), GgmlType::Q8_K);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::IQ4_NL), GgmlType::Q8_0);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::MXFP4), GgmlType::Q8_0);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::Q5_0), GgmlType::Q8_0);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::Q4_1), GgmlType::Q8_1);
  EXPECT_EQ(strata::format::vec_dot_type(GgmlType::Q5_1), GgmlType::Q8_1);
}

TEST(VecDotErrors, RejectsTypesWithoutADotAndPartialBlocks) {
  EXPECT_FALSE(strata::format::has_vec_dot(GgmlType::F32));
  EXPECT_FALSE(strata::format::has_vec_dot(GgmlType::Q8_K));
  EXPECT_THROW(strata::format::vec_dot_type(GgmlType::BF16), strata::Error);
  std::vector<unsigned char> buf(4096);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::F16, buf.data(), buf.data(), 32), strata::Error);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::Q4_K, buf.data(), buf.data(), 128), strata::Error);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::Q8_0, buf.data(), buf.data(), 48), strata::Error);
}

}  // namespace
