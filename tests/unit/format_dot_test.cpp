// Reference dot products against ggml's: tests/data/quant/dot_<T>.tsv holds 32 dot products of <T>.blocks with
// act_<A>.blocks, each as ggml's scalar `_generic` function computed it in a build without FMA contraction
// (`generic_hex`, the bit-exact target) and as a double-precision sum of the decoded values (`ref_f64`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "quant_vectors.hpp"
#include "strata/error.hpp"
#include "strata/format/dot.hpp"
#include "strata/format/fp16.hpp"

namespace {

using strata::format::GgmlType;
using strata::test::quant_dir;

std::string type_file_name(GgmlType type) {
  std::string stem(strata::format::traits(type).name);
  for (char& c : stem) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return stem;
}

struct DotRow {
  int64_t n, w_off, a_off;
  std::string act_type;
  uint32_t generic_bits;
  std::string ref_f64;
  std::string text;  // the row as written, for failure messages
};

std::vector<DotRow> read_dot_rows(const std::string& name) {
  const std::vector<std::vector<std::string>> table = strata::test::read_tsv(quant_dir() / name);
  if (table.empty()) throw std::runtime_error(name + " is empty");
  const std::vector<std::string>& header = table[0];
  const auto column = [&](const std::string& field) {
    const auto it = std::find(header.begin(), header.end(), field);
    if (it == header.end()) throw std::runtime_error(name + " has no column " + field);
    return static_cast<size_t>(it - header.begin());
  };
  const size_t n = column("n"), w_off = column("w_off"), a_off = column("a_off"), act = column("act_type");
  const size_t hex = column("generic_hex"), ref = column("ref_f64");
  std::vector<DotRow> rows;
  for (size_t i = 1; i < table.size(); ++i) {
    const std::vector<std::string>& f = table[i];
    if (f.size() != header.size()) throw std::runtime_error(name + ": row " + std::to_string(i) + " is short");
    std::string text;
    for (const std::string& field : f) text += (text.empty() ? "" : " ") + field;
    rows.push_back({std::stoll(f[n]), std::stoll(f[w_off]), std::stoll(f[a_off]), f[act],
                    static_cast<uint32_t>(std::stoul(f[hex], nullptr, 16)), f[ref], text});
  }
  return rows;
}

std::vector<uint8_t> read_blocks(const std::string& stem) {
  return strata::test::read_bytes(quant_dir() / (stem + ".blocks"));
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
  const std::vector<uint8_t> weights = read_blocks(type_file_name(wtype));
  const std::vector<uint8_t> acts = read_blocks("act_" + type_file_name(atype));
  const std::vector<DotRow> rows = read_dot_rows("dot_" + type_file_name(wtype) + ".tsv");
  ASSERT_EQ(rows.size(), 32u);

  for (const DotRow& r : rows) {
    ASSERT_EQ(r.act_type, type_file_name(atype)) << r.text;
    const uint64_t w_at = static_cast<uint64_t>(r.w_off) / wt.block_elems * wt.block_bytes;
    const uint64_t a_at = static_cast<uint64_t>(r.a_off) / at.block_elems * at.block_bytes;
    ASSERT_LE(w_at + strata::format::row_bytes(wtype, r.n), weights.size()) << r.text;
    ASSERT_LE(a_at + strata::format::row_bytes(atype, r.n), acts.size()) << r.text;
    const float got = strata::format::vec_dot(wtype, weights.data() + w_at, acts.data() + a_at, r.n);
    EXPECT_EQ(strata::format::f32_bits(got), r.generic_bits)
        << type_file_name(wtype) << " row: " << r.text << "\n  got " << hex_bits(got) << " (" << got << "), expected "
        << hex_bits(strata::format::f32_from_bits(r.generic_bits)) << ", ref_f64 " << r.ref_f64;
  }
}

TEST_P(VecDot, ReadsUnalignedBlocks) {
  const GgmlType wtype = GetParam();
  const GgmlType atype = strata::format::vec_dot_type(wtype);
  const std::vector<uint8_t> weights = read_blocks(type_file_name(wtype));
  const std::vector<uint8_t> acts = read_blocks("act_" + type_file_name(atype));
  const int64_t n = 512;
  const float aligned = strata::format::vec_dot(wtype, weights.data(), acts.data(), n);
  std::vector<uint8_t> w1(strata::format::row_bytes(wtype, n) + 1), a1(strata::format::row_bytes(atype, n) + 3);
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
  for (const auto& entry : std::filesystem::directory_iterator(quant_dir())) {
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
  std::vector<uint8_t> buf(4096);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::F16, buf.data(), buf.data(), 32), strata::Error);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::Q4_K, buf.data(), buf.data(), 128), strata::Error);
  EXPECT_THROW(strata::format::vec_dot(GgmlType::Q8_0, buf.data(), buf.data(), 48), strata::Error);
}

}  // namespace
