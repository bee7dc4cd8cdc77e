#include "strata/inspect.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/gguf.hpp"

namespace {

using strata::TensorPart;
using strata::format::GgmlType;
namespace gguf = strata::gguf;
namespace inspect = strata::inspect;

const std::string kStories = std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf";

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `w` to a temporary file with every tensor's bytes set to `fill`, and returns the path.
std::string write_temp(gguf::Writer& w, const std::string& stem, uint8_t fill = 0) {
  const std::string path = ::testing::TempDir() + "inspect_" + stem + ".gguf";
  w.open(path);
  for (size_t i = 0; i < w.tensor_count(); ++i) {
    const std::vector<uint8_t> bytes(w.tensor_bytes(i), fill);
    w.write_tensor(i, bytes);
  }
  w.close();
  return path;
}

void add(gguf::Writer& w, const std::string& name, GgmlType type, std::vector<uint64_t> ne) {
  w.add_tensor(name, type, ne);
}

// --- stories260K: a real llama GGUF, 48 F32 tensors ---

TEST(Inspect, StoriesBytesByPartAddUpToTheDataSection) {
  const auto model = gguf::Model::open(kStories);
  const inspect::Report r = inspect::analyze(model);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].version, 3u);
  EXPECT_EQ(r.files[0].size, std::filesystem::file_size(kStories));
  EXPECT_EQ(r.total.tensors, 48u);
  ASSERT_EQ(r.architecture.value_or(""), "llama");

  uint64_t tensors = 0, bytes = 0, elements = 0;
  for (const auto& t : r.by_part) {
    tensors += t.tensors;
    bytes += t.bytes;
    elements += t.elements;
  }
  EXPECT_EQ(tensors, 48u);
  EXPECT_EQ(bytes, r.total.bytes);
  EXPECT_EQ(elements, r.total.elements);
  // All F32 sizes are multiples of the alignment: the data section is exactly the tensors, no padding.
  EXPECT_EQ(bytes, r.files[0].size - r.files[0].data_offset);
  EXPECT_EQ(bytes, r.data_bytes);
  EXPECT_EQ(r.total.elements * 4, r.total.bytes);

  // 5 layers of q, k, v, output; 5 x 2 norms + output_norm; 5 x 3 dense ffn.
  EXPECT_EQ(r.part(TensorPart::Attention).tensors, 20u);
  EXPECT_EQ(r.part(TensorPart::Norm).tensors, 11u);
  EXPECT_EQ(r.part(TensorPart::DenseFfn).tensors, 15u);
  EXPECT_EQ(r.part(TensorPart::Embeddings).tensors, 1u);
  EXPECT_EQ(r.part(TensorPart::Head).tensors, 1u);
  EXPECT_EQ(r.part(TensorPart::RoutedExperts).tensors, 0u);

  ASSERT_EQ(r.by_type.size(), 1u);
  EXPECT_EQ(r.by_type[0].first, GgmlType::F32);
  EXPECT_EQ(r.by_type[0].second.tensors, 48u);
  EXPECT_DOUBLE_EQ(r.total.bits_per_weight(), 32.0);
  for (const auto& t : r.by_part) {
    if (t.tensors > 0) {
      EXPECT_DOUBLE_EQ(t.bits_per_weight(), 32.0);
    }
  }
  EXPECT_TRUE(r.warnings.empty());
  ASSERT_TRUE(r.arch_issues.has_value());
  EXPECT_TRUE(r.arch_issues->empty()) << r.arch_issues->front();
}

TEST(Inspect, StoriesIsDenseSoATokenReadsEverythingButTheEmbeddingTable) {
  const auto model = gguf::Model::open(kStories);
  const inspect::Report r = inspect::analyze(model);
  ASSERT_TRUE(r.per_token.has_value());
  EXPECT_EQ(r.per_token->n_expert, 0u);
  EXPECT_EQ(r.per_token->routed, 0u);
  EXPECT_FALSE(r.per_token->tied_head);
  // token_embd is 64 x 512 f32: one row is 64 values, 256 bytes.
  const auto& embd = model.tensor("token_embd.weight");
  EXPECT_EQ(r.per_token->dense, r.total.bytes - embd.n_bytes + 64 * 4);
}

TEST(Inspect, StoriesFirstEmbeddingRowMatchesTheFileBytes) {
  const auto model = gguf::Model::open(kStories);
  const auto& t = model.tensor("token_embd.weight");
  ASSERT_EQ(t.ne[0], 64u);
  const std::vector<float> values = inspect::tensor_values(t, t.ne[0]);
  ASSERT_EQ(values.size(), 64u);

  const std::vector<uint8_t> file = read_file(kStories);
  ASSERT_LE(t.file_offset + 64 * 4, file.size());
  for (size_t i = 0; i < 64; ++i) {
    float expected;
    std::memcpy(&expected, file.data() + t.file_offset + i * 4, 4);
    EXPECT_EQ(values[i], expected) << "value " << i;
  }
  // Asking for more values than the tensor has gives all of them.
  EXPECT_EQ(inspect::tensor_values(model.tensor("output_norm.weight"), 1000).size(), 64u);
}

TEST(Inspect, RawValuesOfAnF32TensorAreItsBytes) {
  const auto model = gguf::Model::open(kStories);
  const auto& t = model.tensor("blk.2.ffn_down.weight");
  std::ostringstream out;
  inspect::write_tensor_f32(t, out);
  const std::string raw = out.str();
  ASSERT_EQ(raw.size(), t.n_elements * 4);
  EXPECT_EQ(std::memcmp(raw.data(), t.data, raw.size()), 0);
}

TEST(Inspect, StoriesTextAndJsonReports) {
  const auto model = gguf::Model::open(kStories);
  const inspect::Report r = inspect::analyze(model);
  const std::string text = inspect::render_text(model, r);
  EXPECT_NE(text.find("GGUF version 3, alignment 32, 19 metadata keys, 48 tensors"), std::string::npos) << text;
  EXPECT_NE(text.find("bits per weight: 32.00 overall"), std::string::npos);
  EXPECT_NE(text.find("llama.attention.layer_norm_rms_epsilon  f32 1e-05"), std::string::npos);
  EXPECT_NE(text.find("tokenizer.ggml.tokens                   array of 512 string: [\"<unk>\", \"<s>\", \"</s>\","),
            std::string::npos);

  const auto j = nlohmann::json::parse(inspect::render_json(model, r));
  EXPECT_EQ(j["file"]["version"], 3);
  EXPECT_EQ(j["file"]["size"], std::filesystem::file_size(kStories));
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["metadata"].size(), 19u);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_DOUBLE_EQ(j["total"]["bits_per_weight"].get<double>(), 32.0);
  EXPECT_EQ(j["bytes_by_part"]["attention"]["tensors"], 20);
  EXPECT_EQ(j["bytes_by_type"]["f32"]["bytes"], r.total.bytes);
  EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({64, 512}));
  EXPECT_EQ(j["tensors"][0]["part"], "embeddings");
  // f32 values read as their shortest decimal form.
  for (const auto& e : j["metadata"]) {
    if (e["key"] == "llama.attention.layer_norm_rms_epsilon") {
      EXPECT_EQ(e["value"].dump(), "1e-05");
    }
  }
}

// --- vocabulary-only files: metadata, no tensors ---

TEST(Inspect, VocabFilesHaveNoTensorsAndSummarizedArrays) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STRATA_TEST_DATA) + "/vocab")) {
    if (entry.path().extension() != ".gguf") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const auto model = gguf::Model::open(entry.path().string());
    const inspect::Report r = inspect::analyze(model);
    EXPECT_EQ(r.total.tensors, 0u);
    EXPECT_EQ(r.total.bytes, 0u);
    EXPECT_EQ(r.data_bytes, 0u);
    EXPECT_FALSE(r.per_token.has_value());
    EXPECT_FALSE(r.arch_issues.has_value());
    EXPECT_TRUE(r.warnings.empty());

    const auto tokens = model.metadata().get_string_array("tokenizer.ggml.tokens");
    const std::string text = inspect::render_text(model, r);
    const std::string head = "array of " + std::to_string(tokens.size()) + " string: [";
    const size_t at = text.find(head);
    ASSERT_NE(at, std::string::npos);
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_TRUE(line.ends_with(", ... ]")) << line;
    EXPECT_NE(text.find("tensors: none"), std::string::npos);

    const auto j = nlohmann::json::parse(inspect::render_json(model, r));
    EXPECT_TRUE(j["tensors"].empty());
    bool found = false;
    for (const auto& e : j["metadata"]) {
      if (e["key"] != "tokenizer.ggml.tokens") continue;
      found = true;
      EXPECT_EQ(e["type"], "array");
      EXPECT_EQ(e["element_type"], "string");
      EXPECT_EQ(e["count"], tokens.size());
      EXPECT_EQ(e["truncated"], true);
      ASSERT_EQ(e["values"].size(), inspect::Limits{}.array_head);
      EXPECT_EQ(e["values"][0], std::string(tokens[0]));
    }
    EXPECT_TRUE(found);
  }
  EXPECT_EQ(files, 3);
}

// --- metadata values as text ---

TEST(Inspect, DescribeValueEscapesAndSummarizes) {
  gguf::Writer w;
  w.set_u32("a.u32", 5);
  w.set_i32("a.i32", -3);
  w.set_f32("a.f32", 1e-5f);
  w.set_f64("a.f64", 0.1);
  w.set_bool("a.bool", true);
  w.set_string("a.quote", "say \"hi\"\n\tback\\slash\x01");
  w.set_string("a.bad_utf8", std::string("ok\xff\xc3\xa9", 5));
  // 78 ASCII bytes then a 3-byte character across the 80-byte cut: the cut backs up to before it.
  w.set_string("a.long", std::string(78, 'x') + "\xe2\x82\xac" + std::string(100, 'y'));
  const std::vector<int32_t> short_array = {1, -2, 3};
  w.set_array("a.short", std::span<const int32_t>(short_array));
  std::vector<std::string> tokens = {"!", "\""};
  for (int i = 0; i < 40; ++i) tokens.push_back("t" + std::to_string(i));
  w.set_array("a.tokens", std::span<const std::string>(tokens));
  gguf::ArrayBuilder inner(gguf::ValueType::U8);
  inner.add_u8(7).add_u8(8);
  gguf::ArrayBuilder outer(gguf::ValueType::Array);
  outer.add_array(inner);
  w.set_array("a.nested", outer);
  const std::string path = write_temp(w, "values");
  const auto model = gguf::Model::open(path);
  const auto& meta = model.metadata();
  const auto describe = [&](const char* key) { return inspect::describe_value(meta.find(key)->value); };

  EXPECT_EQ(describe("a.u32"), "u32 5");
  EXPECT_EQ(describe("a.i32"), "i32 -3");
  EXPECT_EQ(describe("a.f32"), "f32 1e-05");
  EXPECT_EQ(describe("a.f64"), "f64 0.1");
  EXPECT_EQ(describe("a.bool"), "bool true");
  EXPECT_EQ(describe("a.quote"), R"(string "say \"hi\"\n\tback\\slash\x01")");
  EXPECT_EQ(describe("a.bad_utf8"), "string \"ok\\xFF\xc3\xa9\"");
  EXPECT_EQ(describe("a.long"), "string of 181 bytes: \"" + std::string(78, 'x') + "\" ...");
  EXPECT_EQ(describe("a.short"), "array of 3 i32: [1, -2, 3]");
  EXPECT_EQ(describe("a.tokens"), R"(array of 42 string: ["!", "\"", "t0", "t1", "t2", "t3", ... ])");
  EXPECT_EQ(describe("a.nested"), "array of 1 array: [array of 2 u8]");

  inspect::Limits wide;
  wide.array_whole = 100;
  wide.string_bytes = 1000;
  EXPECT_TRUE(inspect::describe_value(meta.find("a.tokens")->value, wide).ends_with(R"("t38", "t39"])"));
  EXPECT_TRUE(inspect::describe_value(meta.find("a.long")->value, wide).ends_with("yyy\""));
  std::filesystem::remove(path);
}

// --- a qwen3moe-shaped model: bytes one token reads ---

struct MoeShape {
  uint64_t n_embd = 64, n_vocab = 100, n_head_dim = 32, n_q = 128, n_kv = 64, n_ff_exp = 32;
  uint32_t n_layer = 2, n_expert = 8, n_used = 2;
};

// Writes a qwen3moe model's keys and tensors, leaving out the tensors named in `skip`.
void write_moe(gguf::Writer& w, const MoeShape& s, const std::set<std::string>& skip = {}) {
  const auto add = [&](const std::string& name, GgmlType type, std::vector<uint64_t> ne) {
    if (skip.count(name) == 0) w.add_tensor(name, type, ne);
  };
  w.set_string("general.architecture", "qwen3moe");
  w.set_u32("qwen3moe.block_count", s.n_layer);
  w.set_u32("qwen3moe.context_length", 256);
  w.set_u32("qwen3moe.embedding_length", static_cast<uint32_t>(s.n_embd));
  w.set_u32("qwen3moe.attention.head_count", static_cast<uint32_t>(s.n_q / s.n_head_dim));
  w.set_u32("qwen3moe.attention.head_count_kv", static_cast<uint32_t>(s.n_kv / s.n_head_dim));
  w.set_u32("qwen3moe.attention.key_length", static_cast<uint32_t>(s.n_head_dim));
  w.set_u32("qwen3moe.attention.value_length", static_cast<uint32_t>(s.n_head_dim));
  w.set_f32("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_u32("qwen3moe.vocab_size", static_cast<uint32_t>(s.n_vocab));
  w.set_u32("qwen3moe.expert_count", s.n_expert);
  w.set_u32("qwen3moe.expert_used_count", s.n_used);
  w.set_u32("qwen3moe.expert_feed_forward_length", static_cast<uint32_t>(s.n_ff_exp));
  add("token_embd.weight", GgmlType::F16, {s.n_embd, s.n_vocab});
  add("output_norm.weight", GgmlType::F32, {s.n_embd});
  add("output.weight", GgmlType::Q8_0, {s.n_embd, s.n_vocab});
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", GgmlType::F32, {s.n_embd});
    add(b + "attn_q.weight", GgmlType::Q8_0, {s.n_embd, s.n_q});
    add(b + "attn_k.weight", GgmlType::Q8_0, {s.n_embd, s.n_kv});
    add(b + "attn_v.weight", GgmlType::Q8_0, {s.n_embd, s.n_kv});
    add(b + "attn_output.weight", GgmlType::Q8_0, {s.n_q, s.n_embd});
    add(b + "attn_q_norm.weight", GgmlType::F32, {s.n_head_dim});
    add(b + "attn_k_norm.weight", GgmlType::F32, {s.n_head_dim});
    add(b + "ffn_norm.weight", GgmlType::F32, {s.n_embd});
    add(b + "ffn_gate_inp.weight", GgmlType::F32, {s.n_embd, s.n_expert});
    add(b + "ffn_gate_exps.weight", GgmlType::Q8_0, {s.n_embd, s.n_ff_exp, s.n_expert});
    add(b + "ffn_up_exps.weight", GgmlType::Q8_0, {s.n_embd, s.n_ff_exp, s.n_expert});
    add(b + "ffn_down_exps.weight", GgmlType::Q8_0, {s.n_ff_exp, s.n_embd, s.n_expert});
  }
}

TEST(Inspect, MoeBytesPerTokenFollowTheExpertArithmetic) {
  const MoeShape s;
  gguf::Writer w;
  write_moe(w, s);
  const std::string path = write_temp(w, "qwen3moe");
  const auto model = gguf::Model::open(path);
  const inspect::Report r = inspect::analyze(model);

  // Q8_0: 34 bytes per 32 values; F16: 2 bytes; F32: 4 bytes.
  const auto q8 = [](uint64_t n) { return n / 32 * 34; };
  const uint64_t expert_tensor = q8(s.n_embd * s.n_ff_exp * s.n_expert);  // gate, up and down have as many values
  ASSERT_EQ(expert_tensor, 17408u);
  const uint64_t routed_per_layer = 3 * expert_tensor;
  EXPECT_EQ(r.part(TensorPart::RoutedExperts).bytes, s.n_layer * routed_per_layer);
  EXPECT_EQ(r.part(TensorPart::RoutedExperts).tensors, 3u * s.n_layer);
  EXPECT_DOUBLE_EQ(r.part(TensorPart::RoutedExperts).bits_per_weight(), 8.5);
  EXPECT_EQ(r.part(TensorPart::Router).bytes, s.n_layer * s.n_embd * s.n_expert * 4);

  const uint64_t attention_per_layer = q8(s.n_embd * s.n_q) * 2 + q8(s.n_embd * s.n_kv) * 2;
  const uint64_t norms_per_layer = (s.n_embd * 2 + s.n_head_dim * 2) * 4;
  const uint64_t router_per_layer = s.n_embd * s.n_expert * 4;
  const uint64_t dense = s.n_embd * 2                // one f16 embedding row
                         + s.n_embd * 4              // output_norm
                         + q8(s.n_embd * s.n_vocab)  // output
                         + s.n_layer * (attention_per_layer + norms_per_layer + router_per_layer);
  ASSERT_TRUE(r.per_token.has_value());
  EXPECT_EQ(r.per_token->n_expert, 8u);
  EXPECT_EQ(r.per_token->n_expert_used, 2u);
  EXPECT_EQ(r.per_token->routed, s.n_layer * routed_per_layer * s.n_used / s.n_expert);
  EXPECT_EQ(r.per_token->routed, 26112u);
  EXPECT_EQ(r.per_token->dense, dense);
  EXPECT_EQ(r.per_token->dense, 65040u);
  EXPECT_EQ(r.per_token->total(), 91152u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_TRUE(r.arch_issues.has_value());
  EXPECT_TRUE(r.arch_issues->empty()) << r.arch_issues->front();

  const std::string text = inspect::render_text(model, r);
  EXPECT_NE(text.find("architecture check (qwen3moe): passed"), std::string::npos) << text;
  EXPECT_NE(text.find("  routed experts:          26112 bytes (25.50 KiB): 2 of 8 experts per layer"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  total:                   91152 bytes"), std::string::npos);
  const auto j = nlohmann::json::parse(inspect::render_json(model, r));
  EXPECT_EQ(j["per_token"]["routed_bytes"], 26112);
  EXPECT_EQ(j["per_token"]["dense_bytes"], 65040);
  EXPECT_EQ(j["per_token"]["total_bytes"], 91152);
  std::filesystem::remove(path);
}

TEST(Inspect, MoeWithoutUsedCountWarnsAndSkipsBytesPerToken) {
  gguf::Writer w;
  write_moe(w, MoeShape{});
  w.remove("qwen3moe.expert_used_count");
  const std::string path = write_temp(w, "qwen3moe_no_used");
  const auto model = gguf::Model::open(path);
  const inspect::Report r = inspect::analyze(model);
  EXPECT_FALSE(r.per_token.has_value());
  EXPECT_FALSE(r.arch_issues.has_value());
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("qwen3moe.expert_used_count"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("bytes per token not computed"), std::string::npos) << r.warnings[1];
  EXPECT_NE(inspect::render_text(model, r).find("warning: hyperparameters: "), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Inspect, ArchitectureIssuesAreWarnings) {
  const MoeShape s;
  gguf::Writer w;
  // blk.1.ffn_down_exps missing, blk.0.attn_v too narrow, and a tensor qwen3moe does not have.
  write_moe(w, s, {"blk.1.ffn_down_exps.weight", "blk.0.attn_v.weight"});
  add(w, "blk.0.attn_v.weight", GgmlType::Q8_0, {s.n_embd, s.n_kv / 2});
  add(w, "blk.0.ffn_up_shexp.weight", GgmlType::Q8_0, {s.n_embd, 32});
  const std::string path = write_temp(w, "qwen3moe_broken");
  const auto model = gguf::Model::open(path);
  const inspect::Report r = inspect::analyze(model);
  ASSERT_TRUE(r.arch_issues.has_value());
  ASSERT_EQ(r.arch_issues->size(), 3u);
  const auto has = [&](const std::string& needle) {
    for (const auto& issue : *r.arch_issues) {
      if (issue.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("blk.1.ffn_down_exps.weight: missing"));
  EXPECT_TRUE(has("blk.0.attn_v.weight: shape [64, 64] expected, file has [64, 32]"));
  EXPECT_TRUE(has("blk.0.ffn_up_shexp.weight: not a tensor of a qwen3moe model"));
  // Still a report: routed bytes of the layer that lost a third of its experts shrink accordingly.
  ASSERT_TRUE(r.per_token.has_value());
  EXPECT_EQ(r.per_token->routed, (3 + 2) * 17408u * 2 / 8);
  const std::string text = inspect::render_text(model, r);
  EXPECT_NE(text.find("architecture check (qwen3moe): 3 issues"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: blk.1.ffn_down_exps.weight: missing"), std::string::npos);
  const auto j = nlohmann::json::parse(inspect::render_json(model, r));
  EXPECT_EQ(j["arch_issues"].size(), 3u);
  std::filesystem::remove(path);
}

TEST(Inspect, AHugeBlockCountSkipsTheCheckInsteadOfListingMillionsOfTensors) {
  gguf::Writer w;
  write_moe(w, MoeShape{});
  w.set_u32("qwen3moe.block_count", 4000000000u);
  const std::string path = write_temp(w, "qwen3moe_huge_block_count");
  const auto model = gguf::Model::open(path);
  const inspect::Report r = inspect::analyze(model);
  EXPECT_FALSE(r.arch_issues.has_value());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("block_count is 4000000000 but the file has only 27 tensors"), std::string::npos)
      << r.warnings[0];
  std::filesystem::remove(path);
}

TEST(Inspect, TiedHeadReadsTheWholeEmbeddingTable) {
  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  add(w, "token_embd.weight", GgmlType::F32, {32, 10});
  add(w, "output_norm.weight", GgmlType::F32, {32});
  const std::string path = write_temp(w, "tied");
  const auto model = gguf::Model::open(path);
  const inspect::Report r = inspect::analyze(model);
  ASSERT_TRUE(r.per_token.has_value());
  EXPECT_TRUE(r.per_token->tied_head);
  EXPECT_EQ(r.per_token->dense, 32u * 10 * 4 + 32 * 4);
  std::filesystem::remove(path);
}

// --- tensor values ---

TEST(Inspect, QuantizedValuesAreDecodedAndIntegerTypesRefused) {
  gguf::Writer w;
  add(w, "q", GgmlType::Q8_0, {64});
  add(w, "ints", GgmlType::I32, {4});
  const std::string path = ::testing::TempDir() + "inspect_q8.gguf";
  w.open(path);
  // Two Q8_0 blocks: scale (f16) then 32 int8 quants. Scale 0.5 (0x3800), quants 0..31 and -1..-32.
  std::vector<uint8_t> q(68);
  q[0] = 0x00;
  q[1] = 0x38;
  q[34] = 0x00;
  q[35] = 0x38;
  for (int i = 0; i < 32; ++i) {
    q[2 + i] = static_cast<uint8_t>(i);
    q[36 + i] = static_cast<uint8_t>(-1 - i);
  }
  w.write_tensor(0, q);
  w.write_tensor(1, std::vector<uint8_t>(16, 1));
  w.close();
  const auto model = gguf::Model::open(path);

  const auto values = inspect::tensor_values(model.tensor("q"), 40);
  ASSERT_EQ(values.size(), 40u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(values[i], 0.5f * i);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(values[32 + i], 0.5f * (-1 - i));
  std::ostringstream raw;
  inspect::write_tensor_f32(model.tensor("q"), raw);
  ASSERT_EQ(raw.str().size(), 64u * 4);
  float last;
  std::memcpy(&last, raw.str().data() + 63 * 4, 4);
  EXPECT_EQ(last, -16.0f);

  try {
    inspect::tensor_values(model.tensor("ints"), 4);
    FAIL() << "an i32 tensor has no f32 decoder";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor ints has type i32"), std::string::npos) << e.what();
  }
  std::ostringstream sink;
  EXPECT_THROW(inspect::write_tensor_f32(model.tensor("ints"), sink), strata::Error);
  std::filesystem::remove(path);
}

// --- robustness: whatever the reader accepts, inspect analyses and renders without crashing ---

TEST(Inspect, EveryCorruptedHeaderByteIsRejectedOrRendered) {
  gguf::Writer w;
  write_moe(w, MoeShape{.n_embd = 32, .n_vocab = 10, .n_layer = 1, .n_expert = 4});
  w.set_string("tokenizer.chat_template", std::string(100, 'c'));
  std::vector<std::string> tokens = {"a", "b\xff", "c"};
  w.set_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
  const std::string path = write_temp(w, "corrupt", 0x11);
  const std::vector<uint8_t> original = read_file(path);
  const uint64_t header = gguf::Model::open(path).part(0).data_offset();
  // One file patched in place, a byte at a time, and restored after each try.
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  const auto put = [&](uint64_t at, uint8_t byte) {
    file.seekp(static_cast<std::streamoff>(at));
    file.put(static_cast<char>(byte));
    file.flush();
  };
  int accepted = 0;
  for (uint64_t at = 0; at < header; ++at) {
    for (const uint8_t flip : {uint8_t{0x01}, uint8_t{0xFF}}) {
      put(at, original[at] ^ flip);
      try {
        const auto model = gguf::Model::open(path);
        const inspect::Report r = inspect::analyze(model);
        EXPECT_FALSE(inspect::render_text(model, r).empty());
        EXPECT_FALSE(inspect::render_json(model, r).empty());
        for (const auto& t : model.tensors()) {
          if (strata::format::has_dequantize(t.type)) inspect::tensor_values(t, 16);
        }
        ++accepted;
      } catch (const strata::Error&) {
        // Rejected by the reader with a message: fine.
      }
    }
    put(at, original[at]);
  }
  // Flips inside string values leave a valid file: those were analysed and rendered.
  EXPECT_GT(accepted, 100);
  std::filesystem::remove(path);
}

}  // namespace
