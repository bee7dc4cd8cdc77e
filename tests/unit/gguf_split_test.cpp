// Split models: three parts written here, opened from the first as one model; a missing part, parts that do
// not fit together, and the file-name rules.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "strata/gguf.hpp"

namespace gguf = strata::gguf;
namespace fs = std::filesystem;
using strata::format::GgmlType;

namespace {

constexpr int kTensors = 7;

class GgufSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("gguf_split_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    prefix_ = (dir_ / "model").string();
    for (int i = 0; i < kTensors; ++i) {
      data_.push_back(std::vector<uint8_t>(static_cast<size_t>(34 * (i + 1) * 2)));
      for (size_t b = 0; b < data_.back().size(); ++b) data_.back()[b] = static_cast<uint8_t>(b * 7 + i);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string part_path(uint32_t index, uint32_t count = 3) const { return gguf::split_path(prefix_, index, count); }

  // Part `index` (1-based) of 3 holds tensors [first, last); the split keys may be overridden to make bad parts.
  void write_part(uint32_t index, int first, int last, uint32_t count = 3, int split_no = -1, int total = kTensors,
                  const std::string& path = "") {
    gguf::Writer w;
    if (index == 1) {
      w.set_string("general.architecture", "llama");
      w.set_u32("llama.block_count", 2);
    }
    w.set_u16(gguf::kSplitNoKey, static_cast<uint16_t>(split_no >= 0 ? split_no : static_cast<int>(index) - 1));
    w.set_u16(gguf::kSplitCountKey, static_cast<uint16_t>(count));
    w.set_i32(gguf::kSplitTensorsCountKey, total);
    for (int i = first; i < last; ++i) {
      const uint64_t shape[] = {64, static_cast<uint64_t>(i + 1)};
      w.add_tensor("blk." + std::to_string(i) + ".w", GgmlType::Q8_0, shape);
    }
    w.open(path.empty() ? part_path(index) : path);
    for (int i = first; i < last; ++i) w.write_tensor(static_cast<size_t>(i - first), data_[static_cast<size_t>(i)]);
    w.close();
  }

  void write_good_parts() {
    write_part(1, 0, 3);
    write_part(2, 3, 5);
    write_part(3, 5, 7);
  }

  std::string error_opening(const std::string& path) const {
    try {
      gguf::Model::open(path);
    } catch (const gguf::SplitError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
  std::string prefix_;
  std::vector<std::vector<uint8_t>> data_;
};

}  // namespace

TEST_F(GgufSplit, ThreePartsOpenAsOneModel) {
  write_good_parts();
  const gguf::Model m = gguf::Model::open(part_path(1));
  ASSERT_EQ(m.part_count(), 3u);
  EXPECT_EQ(m.part(1).name(), part_path(2));
  EXPECT_EQ(m.metadata().get_string("general.architecture"), "llama");
  EXPECT_EQ(m.metadata().get_u32("llama.block_count"), 2u);
  ASSERT_EQ(m.tensors().size(), static_cast<size_t>(kTensors));
  const uint32_t expected_part[kTensors] = {0, 0, 0, 1, 1, 2, 2};
  for (int i = 0; i < kTensors; ++i) {
    const gguf::TensorView& t = m.tensor("blk." + std::to_string(i) + ".w");
    EXPECT_EQ(t.split, expected_part[i]) << i;
    EXPECT_EQ(t.ne[1], static_cast<uint64_t>(i + 1));
    const gguf::File& part = m.part(t.split);
    EXPECT_EQ(t.data, part.bytes().data() + t.file_offset);
    ASSERT_EQ(t.n_bytes, data_[static_cast<size_t>(i)].size());
    EXPECT_EQ(std::memcmp(t.data, data_[static_cast<size_t>(i)].data(), t.n_bytes), 0) << i;
  }
  EXPECT_EQ(m.tensors()[4].name, "blk.4.w");
  EXPECT_EQ(m.tensors()[4].split, 1u);
}

TEST_F(GgufSplit, MissingPartIsNamed) {
  write_good_parts();
  fs::remove(part_path(2));
  EXPECT_EQ(error_opening(part_path(1)), part_path(2) + ": part 2 of 3 of the split model " + part_path(1) +
                                             " is missing (all parts must sit beside the first)");
}

TEST_F(GgufSplit, OpeningALaterPartPointsToTheFirst) {
  write_good_parts();
  EXPECT_EQ(error_opening(part_path(2)),
            part_path(2) + ": this is part 2 of 3 of a split model: open the first part, " + part_path(1));
}

TEST_F(GgufSplit, PartWithAnotherCount) {
  write_part(1, 0, 3);
  write_part(2, 3, 5);
  write_part(3, 5, 7, /*count=*/4);
  EXPECT_EQ(error_opening(part_path(1)), part_path(3) + ": split.count is 4 but the first part says 3");
}

TEST_F(GgufSplit, PartsInTheWrongPlace) {
  write_part(1, 0, 3);
  write_part(2, 3, 5, 3, /*split_no=*/2);
  write_part(3, 5, 7);
  EXPECT_EQ(error_opening(part_path(1)),
            part_path(2) + ": split.no is 2 but this file name makes it part 2 of 3 (split.no 1)");
}

TEST_F(GgufSplit, TensorCountMustMatch) {
  write_part(1, 0, 3, 3, -1, /*total=*/8);
  write_part(2, 3, 5);
  write_part(3, 5, 7);
  EXPECT_EQ(error_opening(part_path(1)), part_path(1) + ": split.tensors.count is 8 but the 3 parts hold 7 tensors");
}

TEST_F(GgufSplit, TensorInTwoParts) {
  write_part(1, 0, 3);
  write_part(2, 2, 4);  // blk.2.w again
  write_part(3, 5, 7);
  EXPECT_EQ(error_opening(part_path(1)),
            part_path(1) + ": tensor 'blk.2.w' appears in both " + part_path(1) + " and " + part_path(2));
}

TEST_F(GgufSplit, FirstPartRenamed) {
  const std::string renamed = (dir_ / "renamed.gguf").string();
  write_part(1, 0, 3, 3, -1, kTensors, renamed);
  EXPECT_EQ(error_opening(renamed), renamed + ": split.count is 3 but the file name does not end in "
                                              "-00001-of-00003.gguf, so the other parts cannot be found; keep "
                                              "gguf-split's file names");
}

TEST(GgufSplitNames, ParseAndFormat) {
  EXPECT_EQ(gguf::split_path("/m/qwen3", 2, 15), "/m/qwen3-00002-of-00015.gguf");
  const auto n = gguf::parse_split_path("/m/qwen3-30b-a3b-Q4_K_M-00002-of-00015.gguf");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->prefix, "/m/qwen3-30b-a3b-Q4_K_M");
  EXPECT_EQ(n->index, 2u);
  EXPECT_EQ(n->count, 15u);
  EXPECT_FALSE(gguf::parse_split_path("/m/qwen3.gguf").has_value());
  EXPECT_FALSE(gguf::parse_split_path("-00001-of-00003.gguf").has_value());     // no prefix
  EXPECT_FALSE(gguf::parse_split_path("m-00004-of-00003.gguf").has_value());    // index past count
  EXPECT_FALSE(gguf::parse_split_path("m-00000-of-00003.gguf").has_value());    // parts count from 1
  EXPECT_FALSE(gguf::parse_split_path("m-0001a-of-00003.gguf").has_value());
  EXPECT_FALSE(gguf::parse_split_path("m-00001_of-00003.gguf").has_value());
  EXPECT_FALSE(gguf::parse_split_path("m-00001-of-00003.bin").has_value());
}
