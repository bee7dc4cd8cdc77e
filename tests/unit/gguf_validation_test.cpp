// The reader's strict validation: every failure mode gives a FormatError with the exact message and byte offset,
// for files patched from a small known layout and from the real stories260K model; truncation anywhere fails.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "gguf_samples.hpp"
#include "strata/gguf.hpp"

namespace gguf = strata::gguf;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0).read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

std::vector<uint8_t> stories() { return read_all(STRATA_SOURCE_DIR "/models/stories260K.gguf"); }

// The FormatError message of reading `bytes`, or "" when it reads.
std::string error_of(const std::vector<uint8_t>& bytes, const std::string& name) {
  try {
    gguf::File::from_memory(std::span<const uint8_t>(bytes), name);
  } catch (const gguf::FormatError& e) {
    return e.what();
  }
  return "";
}

template <class T>
void patch(std::vector<uint8_t>& bytes, uint64_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

}  // namespace

TEST(GgufValidation, SmallFileHasTheLayoutTheBadFilesPatch) {
  const gguf::File f = gguf::File::from_memory(gguf::samples::small_file(), "small.gguf");
  EXPECT_EQ(f.size(), 672u);
  EXPECT_EQ(f.data_offset(), 320u);
  const auto kvs = f.metadata().entries();
  ASSERT_EQ(kvs.size(), 5u);
  const uint64_t kv_offsets[] = {24, 69, 102, 147, 202};
  for (size_t i = 0; i < kvs.size(); ++i) EXPECT_EQ(kvs[i].file_offset, kv_offsets[i]) << kvs[i].key;
  EXPECT_EQ(kvs[1].value.file_offset(), 98u);
  EXPECT_EQ(kvs[4].value.file_offset(), 223u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[0].file_offset, 320u);
  EXPECT_EQ(f.tensors()[1].file_offset, 576u);
  EXPECT_EQ(f.tensors()[1].n_bytes, 68u);
  // The nested-arrays sample is valid up to the depth limit.
  EXPECT_NO_THROW(gguf::File::from_memory(gguf::samples::nested_arrays_file(gguf::kMaxArrayDepth), "deep.gguf"));
}

TEST(GgufValidation, EachBadFileGivesItsMessageAndOffset) {
  const std::vector<gguf::samples::BadFile> bad = gguf::samples::bad_files();
  EXPECT_GE(bad.size(), 35u);
  for (const gguf::samples::BadFile& b : bad) {
    const std::string name = b.name + ".gguf";
    EXPECT_EQ(error_of(b.bytes, name), name + ": byte " + std::to_string(b.byte) + ": " + b.message) << b.name;
  }
}

TEST(GgufValidation, BadFilesFailTheSameWayFromDisk) {
  const std::string path = ::testing::TempDir() + "gguf_bad_magic.gguf";
  const gguf::samples::BadFile b = gguf::samples::bad_files()[2];
  ASSERT_EQ(b.name, "bad_magic");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
  try {
    gguf::File::open(path);
    FAIL() << "opened a file with a bad magic";
  } catch (const gguf::FormatError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": byte 0: " + b.message);
  }
  std::remove(path.c_str());
}

TEST(GgufValidation, ErrorsAreStrataErrors) {
  EXPECT_THROW(gguf::File::from_memory(std::vector<uint8_t>{'G', 'G', 'M', 'L'}, "x.gguf"), strata::Error);
  EXPECT_THROW(gguf::File::open("/nonexistent/strata/model.gguf"), gguf::IoError);
}

TEST(GgufValidation, MissingFileNamesThePath) {
  try {
    gguf::File::open("/nonexistent/strata/model.gguf");
    FAIL();
  } catch (const gguf::IoError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/strata/model.gguf: cannot open: No such file or directory");
  }
}

TEST(GgufValidation, EveryTruncationOfTheSmallFileFails) {
  const std::vector<uint8_t> good = gguf::samples::small_file();
  // The last tensor ends at 644; the padding after it may go.
  for (size_t n = 0; n < 644; ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string msg = error_of(cut, "cut.gguf");
    EXPECT_NE(msg.find("(size " + std::to_string(n) + ")"), std::string::npos) << n << ": " << msg;
  }
  EXPECT_EQ(error_of({good.begin(), good.begin() + 644}, "cut.gguf"), "");
}

TEST(GgufValidation, StoriesHugeKeyLength) {
  std::vector<uint8_t> b = stories();
  ASSERT_EQ(b.size(), 1185376u);
  patch<uint64_t>(b, 24, uint64_t{1} << 60);
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 24: kv[0] key length 1152921504606846976 runs past the end of the file (size 1185376)");
}

TEST(GgufValidation, StoriesHugeVocabularyCount) {
  std::vector<uint8_t> b = stories();
  // kv[0] is tokenizer.ggml.tokens: key length @24, key @32..53, type @53, element type @57, count @61.
  patch<uint64_t>(b, 61, uint64_t{1} << 50);
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 61: kv[0] 'tokenizer.ggml.tokens' array count 1125899906842624 (elements of type "
            "string, at least 8 bytes each) runs past the end of the file (size 1185376)");
}

TEST(GgufValidation, StoriesDuplicateKey) {
  std::vector<uint8_t> b = stories();
  // kv[7] tokenizer.ggml.bos_token_id @10834 becomes a second kv[8] tokenizer.ggml.eos_token_id (@10877).
  std::memcpy(b.data() + 10834 + 8, "tokenizer.ggml.eos_token_id", 27);
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 10877: kv[8] 'tokenizer.ggml.eos_token_id' duplicate key (first at kv[7], byte 10834)");
}

TEST(GgufValidation, StoriesTensorDataPastTheEnd) {
  std::vector<uint8_t> b = stories();
  b.resize(14176 + 1000);  // the data section starts at 14176; tensor 0 needs 131072 bytes
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 11396: tensor[0] 'token_embd.weight' data (131072 bytes at offset 0 in the data "
            "section, which starts at byte 14176) runs past the end of the file (size 15176)");
}

TEST(GgufValidation, StoriesMisalignedAndOverlappingTensors) {
  std::vector<uint8_t> b = stories();
  // tensor[1] output_norm.weight: offset field @11446, value 131072.
  patch<uint64_t>(b, 11446, 131072 + 4);
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 11446: tensor[1] 'output_norm.weight' data offset 131076 is not a multiple of the "
            "alignment 32");
  patch<uint64_t>(b, 11446, 131072 - 32);
  EXPECT_EQ(error_of(b, "model.gguf"),
            "model.gguf: byte 11446: tensor[1] 'output_norm.weight' data [131040, 131296) overlaps tensor[0] "
            "'token_embd.weight' data [0, 131072) (offsets in the data section)");
}

TEST(GgufValidation, EveryTruncationOfTheStoriesHeaderFails) {
  const std::vector<uint8_t> good = stories();
  for (size_t n = 0; n < 14176 + 64; ++n) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string msg = error_of(cut, "cut.gguf");
    ASSERT_NE(msg.find("(size " + std::to_string(n) + ")"), std::string::npos) << n << ": " << msg;
  }
}
