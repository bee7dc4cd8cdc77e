#include <gtest/gtest.h>

#include "test_temp_dir.hpp"
#include <unistd.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "strata/arch.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"
#include "strata/mkmodel.hpp"

namespace {

namespace fs = std::filesystem;
using strata::Arch;
using strata::HParams;
using strata::format::GgmlType;
using strata::gguf::Model;
using strata::mkmodel::ModelSpec;
using strata::mkmodel::QuantPreset;

std::string temp_path(const std::string& name) { return strata::testing_support::test_temp_path("mkmodel", name); }

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ModelSpec tiny(Arch arch, QuantPreset quant) {
  ModelSpec s = *strata::mkmodel::shape_preset("tiny", arch);
  s.quant = quant;
  return s;
}

std::string write(const ModelSpec& spec, const std::string& name, unsigned threads = 2, uint64_t chunk = 1 << 20) {
  const std::string path = temp_path(name);
  strata::mkmodel::WriteOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  strata::mkmodel::write_model(spec, path, o);
  return path;
}

struct RunResult {
  int status;
  std::string output;
};

// Runs the strata executable with `args`, stdout and stderr together.
RunResult run_strata(const std::string& args) {
  const std::string cmd = std::string(STRATA_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  RunResult r{-1, ""};
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::vector<float> decode(const strata::gguf::TensorView& t) {
  std::vector<float> v(t.n_elements);
  strata::format::dequantize_row(t.type, t.data, v.data(), static_cast<int64_t>(v.size()));
  return v;
}

struct Stats {
  double mean = 0, rms = 0, row_mean_rms = 0;
};

Stats stats_of(const std::vector<float>& v, uint64_t row) {
  Stats s;
  double sum = 0, sq = 0, row_sq = 0;
  for (size_t r = 0; r < v.size() / row; ++r) {
    double rs = 0;
    for (size_t i = 0; i < row; ++i) rs += static_cast<double>(v[r * row + i]);
    sum += rs;
    row_sq += (rs / static_cast<double>(row)) * (rs / static_cast<double>(row));
  }
  for (float x : v) sq += static_cast<double>(x) * static_cast<double>(x);
  const double n = static_cast<double>(v.size());
  s.mean = sum / n;
  s.rms = std::sqrt(sq / n);
  s.row_mean_rms = std::sqrt(row_sq / (n / static_cast<double>(row)));
  return s;
}

// Every weight of the file: zero-mean relative to its rms, rms 1/sqrt(row width), row means no larger than
// random rows' (the biased generator of the peer's first attempt fails all three); norms exactly 1.
void check_weights(const std::string& path, std::set<GgmlType>& seen) {
  const Model model = Model::open(path);
  for (const auto& t : model.tensors()) {
    const std::string name(t.name);
    const std::vector<float> v = decode(t);
    seen.insert(t.type);
    if (name.find("norm.weight") != std::string::npos) {
      for (float x : v) ASSERT_EQ(x, 1.0f) << name;
      continue;
    }
    const uint64_t row = t.ne[0];
    const Stats s = stats_of(v, row);
    const double want = 1.0 / std::sqrt(static_cast<double>(row));
    const double n = static_cast<double>(v.size());
    // Sampling noise of a small tensor's rms, plus 2% for the spread of sub-block scales.
    EXPECT_NEAR(s.rms, want, want * (0.02 + 4.0 / std::sqrt(n))) << name << " " << strata::format::traits(t.type).name;
    EXPECT_LT(std::abs(s.mean), 5.0 * s.rms / std::sqrt(n) + 1e-3 * s.rms)
        << name << " " << strata::format::traits(t.type).name << ": mean " << s.mean << " rms " << s.rms;
    EXPECT_LT(s.row_mean_rms, 2.0 * s.rms / std::sqrt(static_cast<double>(row)))
        << name << " " << strata::format::traits(t.type).name << ": rows are biased";
  }
}

TEST(Mkmodel, EveryPresetTypeDecodesZeroMeanAtTheTargetRms) {
  std::set<GgmlType> seen;
  for (const auto& preset : strata::mkmodel::quant_presets()) {
    SCOPED_TRACE(std::string(preset.name));
    check_weights(write(tiny(Arch::Qwen3Moe, preset.preset), "stats_" + std::string(preset.name) + ".gguf"), seen);
  }
  // Row widths that 256-value blocks do not divide take llama.cpp's fallbacks (96: 32-value blocks; 80: F16).
  ModelSpec odd = tiny(Arch::Llama, QuantPreset::Q4_K_M);
  odd.n_embd = 96;
  odd.n_head = 2;
  odd.n_head_kv = 1;
  odd.head_dim = 40;
  odd.n_ff = 96;
  for (QuantPreset q : {QuantPreset::Q4_K_M, QuantPreset::UD_Q4_K_XL, QuantPreset::IQ2_XS, QuantPreset::IQ3_S}) {
    odd.quant = q;
    check_weights(write(odd, "stats_odd.gguf"), seen);
  }
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                     GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ2_XS,
                     GgmlType::IQ3_S, GgmlType::IQ4_NL, GgmlType::MXFP4}) {
    EXPECT_TRUE(seen.count(t)) << strata::format::traits(t).name << " was never generated";
  }
}

TEST(Mkmodel, SameBytesWhateverTheThreadCount) {
  const ModelSpec spec = tiny(Arch::Qwen3Moe, QuantPreset::UD_Q4_K_XL);
  const auto one = file_bytes(write(spec, "threads1.gguf", 1, 1 << 20));
  const auto two = file_bytes(write(spec, "threads2.gguf", 2, 4096));
  ASSERT_GT(one.size(), 1000000u);
  EXPECT_TRUE(one == two);
  ModelSpec other = spec;
  other.seed = 2;
  EXPECT_FALSE(file_bytes(write(other, "seed2.gguf")) == one);
}

TEST(Mkmodel, FilesCarryLlamaCppNamesAndTheShapeAskedFor) {
  for (Arch arch : {Arch::Qwen3Moe, Arch::Llama}) {
    for (uint32_t experts : {0u, 6u}) {
      if (arch == Arch::Qwen3Moe && experts == 0) continue;
      ModelSpec s = tiny(arch, QuantPreset::Q4_K_M);
      s.n_expert = experts;
      s.n_expert_used = experts == 0 ? 0 : 3;
      const Model model = Model::open(write(s, "names.gguf"));
      const HParams hp = strata::read_hparams(model.metadata());
      EXPECT_TRUE(strata::check_tensors(hp, model).empty()) << strata::arch_name(arch) << " " << experts;
      EXPECT_EQ(hp.n_expert, experts);
      EXPECT_NE(model.find_tensor("output.weight"), nullptr);
      EXPECT_EQ(model.tensors().size(), 3u + 4u * (arch == Arch::Llama ? (experts ? 10u : 9u) : 12u));
    }
  }
}

TEST(Mkmodel, EveryDimensionFlagReachesTheFile) {
  const std::string path = temp_path("flags.gguf");
  const auto r = run_strata(
      "mkmodel --arch qwen3moe --shape tiny --layers 3 --embd 512 --ff 1536 --expert-ff 768 --heads 8 --kv-heads 2 "
      "--head-dim 32 --experts 6 --experts-used 3 --vocab 1000 --context 2048 --rope-theta 500000 --rms-eps 1e-5 "
      "--quant q8_0 --seed 7 --threads 2 --out " + path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("wrote " + path + ": "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GB/s"), std::string::npos) << r.output;
  const Model model = Model::open(path);
  const HParams hp = strata::read_hparams(model.metadata());
  EXPECT_EQ(hp.arch, Arch::Qwen3Moe);
  EXPECT_EQ(hp.n_layer, 3u);
  EXPECT_EQ(hp.n_embd, 512u);
  EXPECT_EQ(hp.n_ff, 1536u);
  EXPECT_EQ(hp.n_ff_exp, 768u);
  EXPECT_EQ(hp.n_head, 8u);
  EXPECT_EQ(hp.n_head_kv, 2u);
  EXPECT_EQ(hp.head_dim_k, 32u);
  EXPECT_EQ(hp.n_rot, 32u);
  EXPECT_EQ(hp.n_expert, 6u);
  EXPECT_EQ(hp.n_expert_used, 3u);
  EXPECT_EQ(hp.n_vocab, 1000u);
  EXPECT_EQ(hp.n_ctx_train, 2048u);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 500000.0f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
  EXPECT_EQ(model.metadata().get_u64("strata.mkmodel.seed"), 7u);
  EXPECT_EQ(model.tensor("blk.2.ffn_down_exps.weight").type, GgmlType::Q8_0);
  EXPECT_EQ(model.tensor("blk.2.ffn_down_exps.weight").shape()[0], 768u);
  EXPECT_EQ(model.tensor("blk.0.attn_q.weight").shape()[1], 256u);
  EXPECT_TRUE(strata::check_tensors(hp, model).empty());

  // llama: --expert-ff names the experts' width, which is llama's feed_forward_length.
  const auto l = run_strata("mkmodel --arch llama --layers 2 --embd 256 --expert-ff 512 --experts 4 --top-k 2 --out " +
                            path);
  ASSERT_EQ(l.status, 0) << l.output;
  const HParams lhp = strata::read_hparams(Model::open(path).metadata());
  EXPECT_EQ(lhp.arch, Arch::Llama);
  EXPECT_EQ(lhp.n_ff, 512u);
  EXPECT_EQ(lhp.n_ff_exp, 512u);
  EXPECT_EQ(lhp.n_expert_used, 2u);
}

TEST(Mkmodel, BadFlagsAreUsageErrors) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"mkmodel --out x.gguf --qaunt q8_0", "unknown option '--qaunt'"},
      {"mkmodel --out x.gguf --quant q3_k", "--quant 'q3_k' is not one of f32, q8_0, q4_k_m"},
      {"mkmodel --out x.gguf --shape huge", "--shape 'huge' is not one of tiny, qwen3-30b-a3b, qwen3-235b-a22b"},
      {"mkmodel --out x.gguf --arch qwen2moe",
       "--arch 'qwen2moe': mkmodel writes llama, qwen3moe, gpt-oss, glm4moe, deepseek2 or qwen3vlmoe"},
      {"mkmodel --out x.gguf --heads 4 --kv-heads 3", "--kv-heads 3 must divide --heads 4"},
      {"mkmodel --out x.gguf --experts 4 --experts-used 5", "--experts-used 5 must be between 1 and --experts 4"},
      {"mkmodel --out x.gguf --experts 0", "--experts (qwen3moe has only expert layers) must be at least 1"},
      {"mkmodel --out x.gguf --layers 0", "option --layers: 0 is out of range"},
      {"mkmodel --out x.gguf --layers two", "option --layers: 'two' is not a whole number"},
      {"mkmodel --out x.gguf --vocab 50", "--vocab 50: the built-in vocabulary needs at least 300 tokens"},
      {"mkmodel --out x.gguf --router-skew 1.2", "--router-skew '1.2': expected zipf:S"},
      {"mkmodel --out x.gguf --arch llama --experts 0 --router-skew zipf:1", "--router-skew needs experts"},
      {"mkmodel --out x.gguf --arch llama --ff 128 --expert-ff 256", "--ff and --expert-ff differ"},
      {"mkmodel --shape tiny", "needs --out FILE"},
      {"mkmodel --upcycle d.gguf --experts 4 --out x.gguf", "--upcycle needs --experts E and --top-k K"},
      {"mkmodel --upcycle d.gguf --experts 4 --top-k 2 --shape tiny --out x.gguf", "--shape does not apply"},
      {"mkmodel --out x.gguf --vocab /nonexistent/vocab.gguf", "/nonexistent/vocab.gguf"},
      {"mkmodel --out x.gguf --shape qwen3-30b-a3b --mmproj-out p.gguf", "--mmproj-out is for a vision shape"},
      {"mkmodel --out x.gguf --shape qwen3-vl-30b-a3b", "give --mmproj-out FILE for the projector"},
  };
  for (const auto& c : cases) {
    const auto r = run_strata(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

std::map<std::string, GgmlType> types_of(const strata::mkmodel::Plan& plan) {
  std::map<std::string, GgmlType> out;
  for (const auto& t : plan.tensors) out[t.name] = t.type;
  return out;
}

TEST(Mkmodel, PresetTypesFollowTheirRecipes) {
  ModelSpec s = *strata::mkmodel::shape_preset("qwen3-30b-a3b", Arch::Qwen3Moe);
  s.quant = QuantPreset::Q4_K_M;
  auto t = types_of(strata::mkmodel::plan_model(s));
  EXPECT_EQ(t["token_embd.weight"], GgmlType::Q4_K);
  EXPECT_EQ(t["output.weight"], GgmlType::Q6_K);
  EXPECT_EQ(t["output_norm.weight"], GgmlType::F32);
  EXPECT_EQ(t["blk.0.ffn_gate_inp.weight"], GgmlType::F32);
  // use_more_bits(i, 48): layers 0-5, 42-47 and 8, 11, ..., 41.
  for (int il : {0, 5, 8, 11, 41, 42, 47}) {
    EXPECT_EQ(t["blk." + std::to_string(il) + ".attn_v.weight"], GgmlType::Q6_K) << il;
    EXPECT_EQ(t["blk." + std::to_string(il) + ".ffn_down_exps.weight"], GgmlType::Q6_K) << il;
  }
  for (int il : {6, 7, 9, 10, 40}) {
    EXPECT_EQ(t["blk." + std::to_string(il) + ".attn_v.weight"], GgmlType::Q4_K) << il;
    EXPECT_EQ(t["blk." + std::to_string(il) + ".ffn_down_exps.weight"], GgmlType::Q4_K) << il;
  }
  EXPECT_EQ(t["blk.0.attn_k.weight"], GgmlType::Q4_K);
  EXPECT_EQ(t["blk.0.attn_output.weight"], GgmlType::Q4_K);
  EXPECT_EQ(t["blk.0.ffn_up_exps.weight"], GgmlType::Q4_K);

  s.quant = QuantPreset::Q4_K_Q8_0;
  const auto plan = strata::mkmodel::plan_model(s);
  t = types_of(plan);
  EXPECT_EQ(t["token_embd.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["output.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["blk.3.attn_q.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["blk.3.ffn_down_exps.weight"], GgmlType::Q4_K);
  uint64_t data = 0;
  for (const auto& pt : plan.tensors) data += pt.n_bytes;
  EXPECT_EQ(plan.tensors.size(), 579u);
  EXPECT_EQ(data, 17982447616u);  // the tensor bytes of the peer figures' 17,985,715,456-byte file

  s.quant = QuantPreset::IQ2_XS;
  t = types_of(strata::mkmodel::plan_model(s));
  EXPECT_EQ(t["token_embd.weight"], GgmlType::Q2_K);
  EXPECT_EQ(t["output.weight"], GgmlType::Q5_K);
  EXPECT_EQ(t["blk.7.attn_v.weight"], GgmlType::Q4_K);
  EXPECT_EQ(t["blk.5.ffn_down_exps.weight"], GgmlType::Q2_K);  // the first 48/8 blocks
  EXPECT_EQ(t["blk.6.ffn_down_exps.weight"], GgmlType::IQ2_XS);
  EXPECT_EQ(t["blk.6.attn_k.weight"], GgmlType::IQ2_XS);

  s.quant = QuantPreset::IQ3_S;
  t = types_of(strata::mkmodel::plan_model(s));
  EXPECT_EQ(t["token_embd.weight"], GgmlType::IQ3_S);
  EXPECT_EQ(t["output.weight"], GgmlType::Q6_K);
  EXPECT_EQ(t["blk.7.attn_v.weight"], GgmlType::Q4_K);  // 32 / 4 query heads per kv head
  EXPECT_EQ(t["blk.7.ffn_down_exps.weight"], GgmlType::IQ3_S);

  s.quant = QuantPreset::UD_Q4_K_XL;
  t = types_of(strata::mkmodel::plan_model(s));
  EXPECT_EQ(t["blk.7.attn_q.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["blk.7.ffn_down_exps.weight"], GgmlType::Q5_K);
  EXPECT_EQ(t["blk.8.ffn_down_exps.weight"], GgmlType::Q6_K);
  EXPECT_EQ(t["blk.8.ffn_gate_exps.weight"], GgmlType::Q4_K);

  // llama.cpp's Mixtral rules: with exactly 8 experts attn_v and attn_k go to Q8_0, attn_output to Q5_K.
  ModelSpec mix = tiny(Arch::Llama, QuantPreset::Q4_K_M);
  t = types_of(strata::mkmodel::plan_model(mix));
  EXPECT_EQ(t["blk.1.attn_v.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["blk.1.attn_k.weight"], GgmlType::Q8_0);
  EXPECT_EQ(t["blk.1.attn_output.weight"], GgmlType::Q5_K);
}

TEST(Mkmodel, BuiltInVocabulariesAreConsistent) {
  ModelSpec s = tiny(Arch::Qwen3Moe, QuantPreset::Q8_0);
  s.n_vocab = 5000;
  const Model bpe = Model::open(write(s, "bpe.gguf"));
  const auto& md = bpe.metadata();
  EXPECT_EQ(md.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(md.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto tokens = md.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 5000u);
  EXPECT_EQ(md.get_i32_array("tokenizer.ggml.token_type").size(), 5000u);
  const std::set<std::string_view> vocab(tokens.begin(), tokens.end());
  EXPECT_EQ(vocab.size(), tokens.size());
  const auto merges = md.get_string_array("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), 5000u - 256u - 3u);
  for (std::string_view m : merges) {
    const size_t space = m.find(' ');
    ASSERT_NE(space, std::string_view::npos) << m;
    const std::string left(m.substr(0, space)), right(m.substr(space + 1));
    EXPECT_TRUE(vocab.count(left) && vocab.count(right) && vocab.count(left + right)) << m;
  }
  EXPECT_EQ(tokens[md.get_u32("tokenizer.ggml.eos_token_id")], "<|im_end|>");
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[255], "\u0143");  // byte 173, the last remapped byte

  ModelSpec l = tiny(Arch::Llama, QuantPreset::Q8_0);
  l.n_vocab = 1000;
  const Model spm = Model::open(write(l, "spm.gguf"));
  const auto& lm = spm.metadata();
  EXPECT_EQ(lm.get_string("tokenizer.ggml.model"), "llama");
  const auto ltokens = lm.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(ltokens.size(), 1000u);
  EXPECT_EQ(ltokens[1], "<s>");
  EXPECT_EQ(ltokens[3], "<0x00>");
  EXPECT_EQ(ltokens[259], "\u2581");
  EXPECT_EQ(std::set<std::string_view>(ltokens.begin(), ltokens.end()).size(), 1000u);
  const auto scores = lm.get_f32_array("tokenizer.ggml.scores");
  EXPECT_GT(scores[300], scores[301]);
  EXPECT_EQ(lm.get_i32_array("tokenizer.ggml.token_type")[10], 6);  // a byte token
}

TEST(Mkmodel, VocabFileIsCopiedKeyForKey) {
  const std::string vocab = std::string(STRATA_TEST_DATA) + "/vocab/ggml-vocab-gpt-2.gguf";
  ModelSpec s = tiny(Arch::Qwen3Moe, QuantPreset::Q8_0);
  s.vocab_file = vocab;
  const Model out = Model::open(write(s, "copied_vocab.gguf"));
  const auto src = strata::gguf::File::open(vocab);
  size_t copied = 0;
  for (const auto& kv : src.metadata().entries()) {
    if (kv.key.substr(0, 10) != "tokenizer.") continue;
    const auto* got = out.metadata().find(kv.key);
    ASSERT_NE(got, nullptr) << kv.key;
    const auto a = kv.value.encoded(), b = got->value.encoded();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << kv.key;
    ++copied;
  }
  EXPECT_GE(copied, 3u);
  const HParams hp = strata::read_hparams(out.metadata());
  EXPECT_EQ(hp.n_vocab, src.metadata().get_string_array("tokenizer.ggml.tokens").size());
  EXPECT_EQ(out.tensor("token_embd.weight").shape()[1], hp.n_vocab);
}

TEST(Mkmodel, RouterSkewFollowsZipf) {
  ModelSpec s = tiny(Arch::Qwen3Moe, QuantPreset::Q8_0);
  s.n_expert = 16;
  s.n_expert_used = 2;
  s.router_skew = 1.0;
  strata::mkmodel::WriteOptions o;
  const std::string path = temp_path("skew.gguf");
  const auto stats = strata::mkmodel::write_model(s, path, o);
  ASSERT_TRUE(stats.router.has_value());
  const auto& r = *stats.router;
  ASSERT_EQ(r.achieved.size(), 16u);
  double sum = 0;
  for (double a : r.achieved) sum += a;
  EXPECT_NEAR(sum, 2.0, 1e-9);  // every token picks two experts
  // 1/rank: the top expert wanted 2/H_16 = 0.59 of the tokens, capped at one half.
  EXPECT_NEAR(r.target[0], 0.5, 1e-12);
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(r.achieved[i], r.target[i], 0.06) << "rank " << i;
  EXPECT_GT(r.achieved[0], 3 * r.achieved[15]);
  // The router rows carry the skew: the hottest expert of block 0 has the longest row.
  const Model model = Model::open(path);
  const std::vector<float> router = decode(model.tensor("blk.0.ffn_gate_inp.weight"));
  std::vector<double> norms(16, 0.0);
  for (size_t e = 0; e < 16; ++e) {
    for (size_t i = 0; i < 256; ++i) {
      const auto x = static_cast<double>(router[e * 256 + i]);
      norms[e] += x * x;
    }
  }
  EXPECT_GT(*std::max_element(norms.begin(), norms.end()), 4 * *std::min_element(norms.begin(), norms.end()));
}

TEST(Mkmodel, UpcycledStoriesKeepsEveryByteAndCopiesTheFfn) {
  const std::string dense_path = std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf";
  const std::string path = temp_path("stories_moe.gguf");
  strata::mkmodel::UpcycleSpec u{dense_path, 4, 2, 1};
  strata::mkmodel::upcycle(u, path, {});
  const Model dense = Model::open(dense_path);
  const Model moe = Model::open(path);

  for (const auto& kv : dense.metadata().entries()) {
    const auto* got = moe.metadata().find(kv.key);
    ASSERT_NE(got, nullptr) << kv.key;
    const auto a = kv.value.encoded(), b = got->value.encoded();
    EXPECT_TRUE(got->value.type() == kv.value.type() && std::equal(a.begin(), a.end(), b.begin(), b.end()))
        << kv.key;
  }
  EXPECT_EQ(moe.metadata().get_u32("llama.expert_count"), 4u);
  EXPECT_EQ(moe.metadata().get_u32("llama.expert_used_count"), 2u);
  EXPECT_EQ(moe.metadata().entries().size(), dense.metadata().entries().size() + 2);

  const HParams hp = strata::read_hparams(moe.metadata());
  EXPECT_EQ(hp.n_expert, 4u);
  EXPECT_TRUE(strata::check_tensors(hp, moe).empty());
  EXPECT_EQ(moe.tensors().size(), dense.tensors().size() + 5);  // one router per block

  for (const auto& t : dense.tensors()) {
    const std::string name(t.name);
    const size_t ffn = name.find(".ffn_");
    const bool dense_ffn = ffn != std::string::npos && name.find("ffn_norm") == std::string::npos;
    if (!dense_ffn) {
      const auto& m = moe.tensor(name);
      EXPECT_EQ(m.type, t.type);
      EXPECT_TRUE(std::equal(t.data, t.data + t.n_bytes, m.data, m.data + m.n_bytes)) << name;
      continue;
    }
    const std::string stacked = name.substr(0, name.size() - 7) + "_exps.weight";
    const auto& m = moe.tensor(stacked);
    ASSERT_EQ(m.n_dims, 3u);
    EXPECT_EQ(m.ne[0], t.ne[0]);
    EXPECT_EQ(m.ne[1], t.ne[1]);
    EXPECT_EQ(m.ne[2], 4u);
    ASSERT_EQ(m.n_bytes, 4 * t.n_bytes);
    for (uint64_t e = 0; e < 4; ++e) {
      EXPECT_TRUE(std::equal(t.data, t.data + t.n_bytes, m.data + e * t.n_bytes)) << stacked << " expert " << e;
    }
  }
  const auto& router = moe.tensor("blk.2.ffn_gate_inp.weight");
  EXPECT_EQ(router.type, GgmlType::F32);
  EXPECT_EQ(router.shape()[0], 64u);
  EXPECT_EQ(router.shape()[1], 4u);
  const Stats rs = stats_of(decode(router), 64);
  EXPECT_NEAR(rs.rms, 0.125, 0.03);
}

TEST(Mkmodel, CommittedStoriesMoeRegeneratesByteForByte) {
  const std::string path = temp_path("stories260K-moe.gguf");
  const auto r = run_strata("mkmodel --upcycle " + std::string(STRATA_SOURCE_DIR) +
                            "/models/stories260K.gguf --experts 4 --top-k 2 --seed 1 --out " + path);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto committed = file_bytes(std::string(STRATA_SOURCE_DIR) + "/models/stories260K-moe.gguf");
  ASSERT_FALSE(committed.empty());
  EXPECT_TRUE(file_bytes(path) == committed);
}

TEST(Mkmodel, UpcycleRefusesModelsItCannotCopy) {
  const std::string moe = write(tiny(Arch::Llama, QuantPreset::Q8_0), "already_moe.gguf");
  const auto r = run_strata("mkmodel --upcycle " + moe + " --experts 4 --top-k 2 --out " + temp_path("x.gguf"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--upcycle takes a dense llama model; this is llama with experts"), std::string::npos)
      << r.output;
  const auto k = run_strata("mkmodel --upcycle " + std::string(STRATA_SOURCE_DIR) +
                            "/models/stories260K.gguf --experts 4 --top-k 5 --out " + temp_path("x.gguf"));
  EXPECT_EQ(k.status, 2);
  EXPECT_NE(k.output.find("--top-k 5 must be between 1 and --experts 4"), std::string::npos) << k.output;
}

}  // namespace
