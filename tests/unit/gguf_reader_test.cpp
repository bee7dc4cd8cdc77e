// The reader on the project's real GGUF files: stories260K (facts from shared/data/SOURCES.md) and llama.cpp's
// vocab-only files; typed getters and their messages; opening does not touch tensor data.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "strata/gguf.hpp"

namespace gguf = strata::gguf;
using strata::format::GgmlType;

namespace {

const std::string kStories = STRATA_SOURCE_DIR "/models/stories260K.gguf";
const std::string kVocab = STRATA_TEST_DATA "/vocab/";

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GgufReader, StoriesHeaderAndTensors) {
  const gguf::File f = gguf::File::open(kStories);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.size(), 1185376u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.metadata().entries().size(), 19u);
  ASSERT_EQ(f.tensors().size(), 48u);
  uint64_t total = 0;
  for (const gguf::TensorView& t : f.tensors()) {
    EXPECT_EQ(t.type, GgmlType::F32) << t.name;
    EXPECT_EQ(t.n_bytes, t.n_elements * 4) << t.name;
    EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
    EXPECT_EQ(t.data, f.bytes().data() + t.file_offset);
    EXPECT_EQ(t.split, 0u);
    total += t.n_bytes;
  }
  // 5 layers of (q 64x64, k 64x32, v 64x32, o 64x64, gate/up/down 64x172, two norms of 64) + embeddings,
  // output and the final norm.
  EXPECT_EQ(total, 4u * (5 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172 + 2 * 64) + 2 * 64 * 512 + 64));
  const gguf::TensorView& embd = f.tensors()[0];
  EXPECT_EQ(embd.name, "token_embd.weight");
  EXPECT_EQ(embd.n_dims, 2u);
  EXPECT_EQ(embd.ne[0], 64u);
  EXPECT_EQ(embd.ne[1], 512u);
  EXPECT_EQ(embd.ne[2], 1u);
  EXPECT_EQ(embd.file_offset, 14176u);
  const gguf::TensorView* k = f.find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(std::vector<uint64_t>(k->shape().begin(), k->shape().end()), (std::vector<uint64_t>{64, 32}));
  const gguf::TensorView* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->n_dims, 1u);
  EXPECT_EQ(norm->n_elements, 64u);
  EXPECT_EQ(f.find_tensor("rope_freqs.weight"), nullptr);
  // output.weight is a byte copy of token_embd.weight.
  const gguf::TensorView* out = f.find_tensor("output.weight");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->n_bytes, embd.n_bytes);
  EXPECT_EQ(std::memcmp(out->data, embd.data, embd.n_bytes), 0);
}

TEST(GgufReader, StoriesHyperparameters) {
  const gguf::File f = gguf::File::open(kStories);
  const gguf::Metadata& m = f.metadata();
  EXPECT_EQ(m.get_string("general.architecture"), "llama");
  EXPECT_EQ(m.get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(m.get_u32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(m.get_u32("llama.block_count"), 5u);
  EXPECT_EQ(m.get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(m.get_u32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(m.get_u32("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(m.get_u32("llama.context_length"), 2048u);
  EXPECT_FLOAT_EQ(m.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FALSE(m.find_f32("llama.rope.freq_base").has_value());
  // Integer getters take any integer type whose value fits.
  EXPECT_EQ(m.get_u64("llama.block_count"), 5u);
  EXPECT_EQ(m.get_i16("llama.block_count"), 5);
  EXPECT_EQ(m.get_u8("llama.embedding_length"), 64);
  EXPECT_EQ(m.get_u32("tokenizer.ggml.seperator_token_id"), 4294967295u);
  EXPECT_EQ(m.get_i64("tokenizer.ggml.padding_token_id"), 4294967295);
}

TEST(GgufReader, StoriesTokenizer) {
  const gguf::File f = gguf::File::open(kStories);
  const gguf::Metadata& m = f.metadata();
  EXPECT_EQ(m.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_FALSE(m.contains("tokenizer.ggml.pre"));
  EXPECT_EQ(m.get_u32("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_EQ(m.get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(m.get_u32("tokenizer.ggml.eos_token_id"), 2u);
  const std::span<const std::string_view> tokens = m.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(tokens[258], "<0xFF>");
  // Token strings view the mapped file.
  EXPECT_GE(reinterpret_cast<const uint8_t*>(tokens[100].data()), f.bytes().data());
  EXPECT_LT(reinterpret_cast<const uint8_t*>(tokens[100].data()), f.bytes().data() + f.data_offset());
  const std::vector<int32_t> types = m.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(types.size(), 512u);
  for (int i = 3; i <= 258; ++i) EXPECT_EQ(types[i], 6) << i;
  const std::vector<float> scores = m.get_f32_array("tokenizer.ggml.scores");
  ASSERT_EQ(scores.size(), 512u);
  for (int i = 259; i < 512; ++i) EXPECT_EQ(scores[i], -static_cast<float>(i - 259)) << i;
  // The same array element by element.
  const gguf::ArrayView a = m.get_array("tokenizer.ggml.scores");
  EXPECT_EQ(a.element_type(), gguf::ValueType::F32);
  EXPECT_EQ(a[300].as_f64(), -41.0);
  EXPECT_EQ(a.element_bytes().size(), 512u * 4);
  EXPECT_THROW(a[512], std::out_of_range);
}

TEST(GgufReader, GetterMessagesNameKeyOffsetAndWhatWasFound) {
  const gguf::File f = gguf::File::open(kStories);
  const gguf::Metadata& m = f.metadata();
  const std::string p = kStories + ": ";
  EXPECT_EQ(message_of([&] { m.get_string("llama.block_count"); }),
            p + "byte 11218: metadata key 'llama.block_count' is u32 5, expected string");
  EXPECT_EQ(message_of([&] { m.get_u32("general.name"); }),
            p + "byte 10750: metadata key 'general.name' is string \"llama\", expected u32");
  EXPECT_EQ(message_of([&] { m.get_i32("tokenizer.ggml.padding_token_id"); }),
            p + "byte 10969: metadata key 'tokenizer.ggml.padding_token_id' is u32 4294967295, which does not fit "
                "in i32");
  EXPECT_EQ(message_of([&] { m.get_u8("llama.context_length"); }),
            p + "byte 11016: metadata key 'llama.context_length' is u32 2048, which does not fit in u8");
  EXPECT_EQ(message_of([&] { m.get_u32("llama.attention.layer_norm_rms_epsilon"); }),
            p + "byte 11293: metadata key 'llama.attention.layer_norm_rms_epsilon' is f32 9.999999747378752e-06, "
                "expected u32");
  EXPECT_EQ(message_of([&] { m.get_u32("llama.block_cout"); }),
            p + "metadata key 'llama.block_cout' is missing (did you mean 'llama.block_count'?)");
  EXPECT_EQ(message_of([&] { m.get_string_array("tokenizer.ggml.scores"); }),
            p + "byte 6470: metadata key 'tokenizer.ggml.scores' is array of 512 f32, expected array of string");
  EXPECT_EQ(message_of([&] { m.get_f32_array("tokenizer.ggml.tokens"); }),
            p + "byte 24: metadata key 'tokenizer.ggml.tokens' is array of 512 string, expected array of f32");
  // find_* is quiet about a missing key but not about a wrong type.
  EXPECT_FALSE(m.find_u32("llama.expert_count").has_value());
  EXPECT_THROW(m.find_u32("general.name"), gguf::MetadataError);
}

TEST(GgufReader, VocabularyFiles) {
  struct Expect {
    const char* file;
    const char* model;
    const char* pre;
    size_t tokens;
    size_t merges;  // 0: none
    bool scores;
  };
  const Expect expects[] = {
      {"ggml-vocab-deepseek-llm.gguf", "gpt2", "deepseek-llm", 102400, 99757, false},
      {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", 50257, 50000, false},
      {"ggml-vocab-phi-3.gguf", "llama", "default", 32064, 0, true},
  };
  for (const Expect& e : expects) {
    const gguf::File f = gguf::File::open(kVocab + e.file);
    const gguf::Metadata& m = f.metadata();
    EXPECT_EQ(f.tensors().size(), 0u) << e.file;
    EXPECT_EQ(m.get_string("tokenizer.ggml.model"), e.model) << e.file;
    EXPECT_EQ(m.get_string("tokenizer.ggml.pre"), e.pre) << e.file;
    EXPECT_EQ(m.get_string_array("tokenizer.ggml.tokens").size(), e.tokens) << e.file;
    EXPECT_EQ(m.get_i32_array("tokenizer.ggml.token_type").size(), e.tokens) << e.file;
    if (e.merges != 0) {
      EXPECT_EQ(m.get_string_array("tokenizer.ggml.merges").size(), e.merges) << e.file;
    } else {
      EXPECT_FALSE(m.contains("tokenizer.ggml.merges")) << e.file;
    }
    EXPECT_EQ(m.contains("tokenizer.ggml.scores"), e.scores) << e.file;
    if (e.scores) {
      EXPECT_EQ(m.get_f32_array("tokenizer.ggml.scores").size(), e.tokens) << e.file;
    }
  }
  const gguf::File ds = gguf::File::open(kVocab + "ggml-vocab-deepseek-llm.gguf");
  EXPECT_EQ(ds.metadata().get_u32("tokenizer.ggml.bos_token_id"), 100000u);
  EXPECT_EQ(ds.metadata().get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(ds.metadata().get_bool("tokenizer.ggml.add_eos_token"), false);
  EXPECT_EQ(ds.metadata().get_string_array("tokenizer.ggml.merges")[0], "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  const gguf::File gpt2 = gguf::File::open(kVocab + "ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2.metadata().get_string_array("tokenizer.ggml.tokens")[0], "!");
  EXPECT_EQ(gpt2.metadata().get_u32("tokenizer.ggml.eos_token_id"), 50256u);
  const gguf::File phi = gguf::File::open(kVocab + "ggml-vocab-phi-3.gguf");
  EXPECT_TRUE(phi.metadata().get_string("tokenizer.chat_template").starts_with("{{ bos_token }}"));
  EXPECT_EQ(phi.metadata().get_u32("general.quantization_version"), 2u);
  EXPECT_FLOAT_EQ(phi.metadata().get_f32("phi3.rope.freq_base"), 10000.0f);
}

TEST(GgufReader, ModelOfOneFile) {
  const gguf::Model m = gguf::Model::open(kStories);
  EXPECT_EQ(m.part_count(), 1u);
  EXPECT_EQ(m.tensors().size(), 48u);
  EXPECT_EQ(m.tensor("blk.4.ffn_norm.weight").n_elements, 64u);
  EXPECT_EQ(m.metadata().get_u32("llama.block_count"), 5u);
  EXPECT_EQ(message_of([&] { m.tensor("blk.4.ffn_nrom.weight"); }),
            kStories + ": tensor 'blk.4.ffn_nrom.weight' is missing (did you mean 'blk.4.ffn_norm.weight'?)");
}

TEST(GgufReader, FromMemoryViewsTheCallersBytes) {
  const gguf::File mapped = gguf::File::open(kStories);
  const std::vector<uint8_t> copy(mapped.bytes().begin(), mapped.bytes().end());
  const gguf::File f = gguf::File::from_memory(std::span<const uint8_t>(copy), "copy.gguf");
  EXPECT_EQ(f.name(), "copy.gguf");
  EXPECT_EQ(f.tensors()[5].data, copy.data() + mapped.tensors()[5].file_offset);
  const auto offset_of = [](const gguf::File& file, std::string_view s) {
    return reinterpret_cast<const uint8_t*>(s.data()) - file.bytes().data();
  };
  EXPECT_EQ(offset_of(f, f.metadata().get_string_array("tokenizer.ggml.tokens")[7]),
            offset_of(mapped, mapped.metadata().get_string_array("tokenizer.ggml.tokens")[7]));
  EXPECT_EQ(f.bytes().data(), copy.data());
}

TEST(GgufReader, OpeningIsFast) {
  // Milliseconds in a release build; the bound leaves room for Debug and sanitizer builds.
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* name : {"ggml-vocab-deepseek-llm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-phi-3.gguf"}) {
    gguf::File::open(kVocab + name);
  }
  gguf::File::open(kStories);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 2000.0);
  std::printf("opened three vocabularies and stories260K in %.1f ms\n", ms);
}

TEST(GgufReader, OpeningDoesNotTouchTensorData) {
  // A 64 MiB tensor whose data is never written: a hole, in no page cache until someone reads it.
  const std::string path = ::testing::TempDir() + "gguf_untouched_" + std::to_string(::getpid()) + ".gguf";
  {
    gguf::Writer w;
    w.set_string("general.architecture", "llama");
    const uint64_t shape[] = {4096, 4096};
    w.add_tensor("big", GgmlType::F32, shape);
    w.open(path);
    EXPECT_THROW(w.close(), gguf::IoError);  // the tensor was not written: close() says so
  }
  const gguf::File f = gguf::File::open(path);
  const gguf::TensorView& t = f.tensors()[0];
  ASSERT_EQ(t.n_bytes, uint64_t{64} << 20);
  // Skip the first MiB of data: read-ahead around the header may bring in its neighbours.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(t.data) + (1u << 20)) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(t.data + t.n_bytes) & ~(page - 1);
  std::vector<unsigned char> resident((end - begin) / page);
  ASSERT_EQ(::mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()), 0);
  size_t touched = 0;
  for (unsigned char r : resident) touched += r & 1;
  EXPECT_EQ(touched, 0u);
  std::filesystem::remove(path);
}
