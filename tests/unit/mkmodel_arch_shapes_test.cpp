// `strata mkmodel` shapes of gpt-oss (gpt-oss-20b, gpt-oss-120b), glm4moe (glm-4.5-air, glm-4.6) and deepseek2
// (deepseek-v3, kimi-k2): the plans of the full shapes (hyperparameters, every tensor the architecture requires
// with its shape, the types and bytes of the published files) and of cuts by --layers, without writing them; then
// shrunken variants (the same keys, tensors and types, small widths) written, loaded, checked against the
// architecture and run: finite logits, and experts that are actually chosen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <map>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "mkmodel_plan_lookup.hpp"
#include "strata/arch.hpp"
#include "strata/engine.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"
#include "strata/mkmodel.hpp"
#include "test_temp_dir.hpp"

namespace {

using strata::Arch;
using strata::HParams;
using strata::format::GgmlType;
using strata::mkmodel::ModelSpec;
using strata::mkmodel::Plan;
using strata::mkmodel::QuantPreset;

using strata::test::shape;

std::map<std::string, const strata::mkmodel::PlannedTensor*> by_name(const Plan& plan) {
  return strata::test::by_name(plan.tensors);
}

// Every tensor the architecture requires is planned with its shape, and nothing it does not know.
void expect_arch_complete(const Plan& plan) {
  const auto planned = by_name(plan);
  std::map<std::string, std::vector<uint64_t>> known;
  for (const strata::TensorSpec& t : strata::expected_tensors(plan.hparams)) {
    known[t.name] = t.ne;
    if (!t.required) continue;
    const auto it = planned.find(t.name);
    ASSERT_NE(it, planned.end()) << t.name << " is required";
    EXPECT_EQ(it->second->ne, t.ne) << t.name;
  }
  for (const auto& t : plan.tensors) EXPECT_TRUE(known.count(t.name)) << t.name << " is not a tensor of the arch";
}

uint64_t tensor_bytes(const Plan& plan) {
  uint64_t n = 0;
  for (const auto& t : plan.tensors) n += t.n_bytes;
  return n;
}

uint64_t parameters(const Plan& plan) {
  uint64_t n = 0;
  for (const auto& t : plan.tensors) {
    uint64_t e = 1;
    for (uint64_t d : t.ne) e *= d;
    n += e;
  }
  return n;
}

TEST(MkmodelArchShapes, ShapesBelongToTheirArchitecture) {
  EXPECT_EQ(strata::mkmodel::shape_arch("gpt-oss-20b"), Arch::GptOss);
  EXPECT_EQ(strata::mkmodel::shape_arch("glm-4.6"), Arch::Glm4Moe);
  EXPECT_FALSE(strata::mkmodel::shape_arch("tiny").has_value());
  EXPECT_FALSE(strata::mkmodel::shape_preset("gpt-oss-20b", Arch::Qwen3Moe).has_value());
  EXPECT_FALSE(strata::mkmodel::shape_preset("glm-4.5-air", Arch::GptOss).has_value());
  EXPECT_FALSE(strata::mkmodel::shape_preset("qwen3-30b-a3b", Arch::Glm4Moe).has_value());
  for (const char* name : {"gpt-oss-20b", "gpt-oss-120b", "glm-4.5-air", "glm-4.6"}) {
    EXPECT_NE(strata::mkmodel::shape_names().find(name), std::string::npos) << name;
  }
}

// gpt-oss-20b and -120b as config.json gives them, with the types of the MXFP4 files llama.cpp's users download:
// the plan's tensor bytes and parameters are llama-bench's figures for ggml-org/gpt-oss-120b-GGUF (59.02 GiB,
// 116.83 B) and the 20b's (11.27 GiB, 20.91 B).
TEST(MkmodelArchShapes, GptOssPlansAreThePublishedModels) {
  struct Want {
    const char* name;
    uint32_t layers, experts;
    uint64_t params_m;  // millions, rounded
    double gib;
  };
  for (const Want& w : {Want{"gpt-oss-20b", 24, 32, 20915, 11.27}, Want{"gpt-oss-120b", 36, 128, 116829, 59.02}}) {
    SCOPED_TRACE(w.name);
    const ModelSpec s = shape(w.name, Arch::GptOss);
    EXPECT_EQ(s.quant, QuantPreset::MXFP4_MOE);
    const Plan plan = strata::mkmodel::plan_model(s);
    const HParams& hp = plan.hparams;
    EXPECT_EQ(hp.arch, Arch::GptOss);
    EXPECT_EQ(hp.n_layer, w.layers);
    EXPECT_EQ(hp.n_embd, 2880u);
    EXPECT_EQ(hp.n_ff, 2880u);
    EXPECT_EQ(hp.n_ff_exp, 2880u);
    EXPECT_EQ(hp.n_head, 64u);
    EXPECT_EQ(hp.n_head_kv, 8u);
    EXPECT_EQ(hp.head_dim_k, 64u);
    EXPECT_EQ(hp.n_rot, 64u);
    EXPECT_EQ(hp.n_expert, w.experts);
    EXPECT_EQ(hp.n_expert_used, 4u);
    EXPECT_EQ(hp.n_vocab, 201088u);
    EXPECT_EQ(hp.n_ctx_train, 131072u);
    EXPECT_FLOAT_EQ(hp.rope_freq_base, 150000.0f);
    EXPECT_EQ(hp.rope_scaling, strata::RopeScaling::Yarn);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f / 32.0f);
    EXPECT_EQ(hp.rope_orig_ctx, 4096u);
    EXPECT_EQ(hp.sliding_window, 128u);
    EXPECT_TRUE(hp.layer_is_swa(0));
    EXPECT_FALSE(hp.layer_is_swa(1));
    EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
    EXPECT_EQ(hp.gating, strata::GatingFunc::SoftmaxWeight);
    expect_arch_complete(plan);

    const auto t = by_name(plan);
    ASSERT_EQ(t.size(), plan.tensors.size());
    EXPECT_EQ(plan.tensors.size(), 3u + 19u * w.layers);
    EXPECT_EQ(t.at("token_embd.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(t.at("output.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(t.at("output_norm.weight")->type, GgmlType::F32);
    for (uint32_t il : {0u, w.layers - 1}) {
      const std::string b = "blk." + std::to_string(il) + ".";
      for (const char* m : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"}) {
        EXPECT_EQ(t.at(b + m)->type, GgmlType::Q8_0) << b + m;
      }
      for (const char* e : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
        EXPECT_EQ(t.at(b + e)->type, GgmlType::MXFP4) << b + e;
      }
      for (const char* f : {"attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias", "attn_sinks.weight",
                            "ffn_gate_inp.weight", "ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias",
                            "ffn_down_exps.bias", "attn_norm.weight", "post_attention_norm.weight"}) {
        EXPECT_EQ(t.at(b + f)->type, GgmlType::F32) << b + f;
      }
    }
    EXPECT_EQ((parameters(plan) + 500000) / 1000000, w.params_m);
    EXPECT_NEAR(static_cast<double>(tensor_bytes(plan)) / (1ull << 30), w.gib, 0.006);
  }
}

// GLM-4.5-Air and GLM-4.6 as config.json gives them: the nextn block counted in block_count, leading dense
// blocks, a shared expert, half-rotary heads, q/k/v biases, q/k norms only where use_qk_norm, sigmoid gating.
TEST(MkmodelArchShapes, GlmPlansAreThePublishedModels) {
  struct Want {
    const char* name;
    uint32_t layers, embd, ff, expert_ff, experts, dense_lead;
    float scale;
    bool qk_norm;
    uint32_t context;
  };
  for (const Want& w : {Want{"glm-4.5-air", 46, 4096, 10944, 1408, 128, 1, 1.0f, false, 131072},
                        Want{"glm-4.6", 92, 5120, 12288, 1536, 160, 3, 2.5f, true, 202752}}) {
    SCOPED_TRACE(w.name);
    const ModelSpec s = shape(w.name, Arch::Glm4Moe);
    EXPECT_EQ(s.quant, QuantPreset::Q4_K_M);
    const Plan plan = strata::mkmodel::plan_model(s);
    const HParams& hp = plan.hparams;
    EXPECT_EQ(hp.arch, Arch::Glm4Moe);
    EXPECT_EQ(hp.n_layer, w.layers + 1);
    EXPECT_EQ(hp.n_layer_nextn, 1u);
    EXPECT_EQ(hp.n_layer_main(), w.layers);
    EXPECT_EQ(hp.n_embd, w.embd);
    EXPECT_EQ(hp.n_ff, w.ff);
    EXPECT_EQ(hp.n_ff_exp, w.expert_ff);
    EXPECT_EQ(hp.n_expert, w.experts);
    EXPECT_EQ(hp.n_expert_used, 8u);
    EXPECT_EQ(hp.n_expert_shared, 1u);
    EXPECT_EQ(hp.n_ff_shexp, w.expert_ff);
    EXPECT_EQ(hp.n_layer_dense_lead, w.dense_lead);
    EXPECT_EQ(hp.n_head, 96u);
    EXPECT_EQ(hp.n_head_kv, 8u);
    EXPECT_EQ(hp.head_dim_k, 128u);
    EXPECT_EQ(hp.n_rot, 64u);
    EXPECT_EQ(hp.n_vocab, 151552u);
    EXPECT_EQ(hp.n_ctx_train, w.context);
    EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
    EXPECT_FLOAT_EQ(hp.rms_eps, 1e-5f);
    EXPECT_EQ(hp.gating, strata::GatingFunc::Sigmoid);
    EXPECT_FLOAT_EQ(hp.expert_weights_scale, w.scale);
    EXPECT_TRUE(hp.expert_weights_norm);
    expect_arch_complete(plan);

    const auto t = by_name(plan);
    EXPECT_EQ(t.count("blk.0.attn_q_norm.weight"), w.qk_norm ? 1u : 0u);
    EXPECT_EQ(t.count("blk.0.attn_q.bias"), 1u);
    EXPECT_EQ(t.count("blk.0.attn_output.bias"), 0u);
    EXPECT_EQ(t.count("blk.0.ffn_gate.weight"), 1u);
    EXPECT_EQ(t.count("blk.0.ffn_gate_inp.weight"), 0u);
    const std::string moe = "blk." + std::to_string(w.dense_lead) + ".";
    const std::string nextn = "blk." + std::to_string(w.layers) + ".";
    EXPECT_EQ(t.count(moe + "ffn_gate.weight"), 0u);
    EXPECT_EQ(t.count(nextn + "nextn.eh_proj.weight"), 1u);
    EXPECT_EQ(t.count(nextn + "ffn_down_exps.weight"), 1u);
    // llama.cpp's Q4_K_M: Q4_K, Q6_K output, attn_v and ffn_down on the 'more bits' layers (the first of 47 or 93
    // blocks is one); a 1408-wide down row is not whole 256-value blocks, so Air's takes Q8_0 there (and Q5_0
    // for the other layers' Q4_K).
    EXPECT_EQ(t.at("token_embd.weight")->type, GgmlType::Q4_K);
    EXPECT_EQ(t.at("output.weight")->type, GgmlType::Q6_K);
    EXPECT_EQ(t.at("blk.0.attn_v.weight")->type, GgmlType::Q6_K);
    EXPECT_EQ(t.at(moe + "ffn_gate_exps.weight")->type, GgmlType::Q4_K);
    EXPECT_EQ(t.at(moe + "ffn_up_shexp.weight")->type, GgmlType::Q4_K);
    EXPECT_EQ(t.at(moe + "ffn_down_exps.weight")->type, w.expert_ff % 256 == 0 ? GgmlType::Q6_K : GgmlType::Q8_0);
    EXPECT_EQ(t.at("blk.20.ffn_down_exps.weight")->type, w.expert_ff % 256 == 0 ? GgmlType::Q4_K : GgmlType::Q5_0);
    EXPECT_EQ(t.at(nextn + "nextn.eh_proj.weight")->type, GgmlType::Q4_K);
    for (const char* f : {"exp_probs_b.bias", "ffn_gate_inp.weight", "attn_k.bias", "post_attention_norm.weight"}) {
      EXPECT_EQ(t.at(moe + f)->type, GgmlType::F32) << moe + f;
    }
  }
}

// --layers N: N decoder blocks; glm4moe keeps its nextn block and at most N - 1 leading dense blocks.
TEST(MkmodelArchShapes, LayerCutsKeepAnMoeBlockAndTheNextnBlock) {
  struct Cut {
    const char* name;
    Arch arch;
    uint32_t n, blocks, dense_lead;
  };
  for (const Cut& c : {Cut{"gpt-oss-20b", Arch::GptOss, 2, 2, 0}, Cut{"gpt-oss-120b", Arch::GptOss, 1, 1, 0},
                       Cut{"glm-4.5-air", Arch::Glm4Moe, 2, 3, 1}, Cut{"glm-4.5-air", Arch::Glm4Moe, 1, 2, 0},
                       Cut{"glm-4.6", Arch::Glm4Moe, 2, 3, 1}, Cut{"glm-4.6", Arch::Glm4Moe, 5, 6, 3}}) {
    SCOPED_TRACE(std::string(c.name) + " --layers " + std::to_string(c.n));
    ModelSpec s = shape(c.name, c.arch);
    strata::mkmodel::set_layers(s, c.n);
    const Plan plan = strata::mkmodel::plan_model(s);
    EXPECT_EQ(plan.hparams.n_layer, c.blocks);
    EXPECT_EQ(plan.hparams.n_layer_dense_lead, c.dense_lead);
    EXPECT_TRUE(plan.hparams.layer_has_experts(c.n - 1));
    expect_arch_complete(plan);
  }
  // The CLI cuts the same way.
  const std::string cmd = std::string(STRATA_EXE) + " mkmodel --shape glm-4.6 --layers 2 --dry-run 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  ModelSpec s = shape("glm-4.6", Arch::Glm4Moe);
  strata::mkmodel::set_layers(s, 2);
  const Plan plan = strata::mkmodel::plan_model(s);
  EXPECT_NE(out.find(std::to_string(plan.tensors.size()) + " tensors\n"), std::string::npos) << out;
}

// A shape with small widths: the same architecture, keys, tensors and types.
ModelSpec shrunken(const char* name, Arch arch, uint32_t layers) {
  ModelSpec s = shape(name, arch);
  strata::mkmodel::set_layers(s, layers);
  s.n_embd = 256;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.head_dim = 64;
  s.n_ff = arch == Arch::GptOss ? 256 : 512;
  s.n_ff_exp = 256;
  s.n_expert = 16;
  s.n_expert_used = arch == Arch::GptOss ? 4 : 8;
  s.n_vocab = 1000;
  s.n_ctx = 4096;
  return s;
}

// Writes the spec, loads it as the engine does, and runs a 20-token window and 6 greedy tokens on every backend
// under test: every logit finite, and in every MoE decoder block every token's k choices counted and at least half
// of the experts chosen.
void write_load_run(const ModelSpec& spec, const std::string& file,
                    const std::vector<std::string>& backends = {"reference", "cpu_avx2"}) {
  const std::string path = strata::testing_support::test_temp_path("mkmodel_arch", file);
  strata::mkmodel::WriteOptions o;
  o.threads = 2;
  strata::mkmodel::write_model(spec, path, o);
  const Plan plan = strata::mkmodel::plan_model(spec);

  const strata::gguf::Model file_model = strata::gguf::Model::open(path);
  const HParams hp = strata::read_hparams(file_model.metadata());
  EXPECT_TRUE(strata::check_tensors(hp, file_model).empty());
  EXPECT_EQ(hp.n_layer, plan.hparams.n_layer);
  EXPECT_EQ(hp.n_embd, spec.n_embd);
  EXPECT_EQ(hp.n_expert, spec.n_expert);
  EXPECT_EQ(hp.n_rot, spec.arch == Arch::Deepseek2 ? spec.qk_rope_dim
                                                   : static_cast<uint32_t>(spec.head_dim * spec.rope_fraction));
  EXPECT_EQ(hp.sliding_window, spec.sliding_window);
  EXPECT_EQ(hp.n_layer_dense_lead, spec.n_layer_dense_lead);
  EXPECT_EQ(hp.n_layer_nextn, spec.n_layer_nextn);
  EXPECT_EQ(file_model.tensors().size(), plan.tensors.size());
  for (const auto& t : plan.tensors) EXPECT_EQ(file_model.tensor(t.name).type, t.type) << t.name;

  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    if (std::find(backends.begin(), backends.end(), backend) == backends.end()) continue;
    SCOPED_TRACE(backend);
    strata::EngineSettings settings = strata::test::test_settings();
    settings.context = 64;
    settings.max_window_logits = 24;
    settings.threads = 2;
    auto e = strata::test::open_engine(path, backend, settings);
    EXPECT_EQ(e->model().hparams().n_layer, hp.n_layer);
    std::vector<strata::TokenId> prompt;
    for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<strata::TokenId>((i * 97 + 11) % hp.n_vocab));
    const std::span<const float> window = e->feed_window(0, prompt);
    ASSERT_EQ(window.size(), prompt.size() * hp.n_vocab);
    for (float v : window) ASSERT_TRUE(std::isfinite(v));
    std::span<const float> last = window.subspan(window.size() - hp.n_vocab);
    for (int step = 0; step < 6; ++step) {
      size_t best = 0;
      for (size_t i = 0; i < last.size(); ++i) {
        ASSERT_TRUE(std::isfinite(last[i])) << "logit " << i << " at step " << step;
        if (last[i] > last[best]) best = i;
      }
      const auto next = static_cast<strata::TokenId>(best);
      last = e->feed(0, std::span<const strata::TokenId>(&next, 1));
    }
    const strata::ExpertUsage u = e->expert_usage();
    ASSERT_EQ(u.n_expert, hp.n_expert);
    for (uint32_t l = 0; l < hp.n_layer_main(); ++l) {
      if (!hp.layer_has_experts(l)) continue;
      uint64_t total = 0;
      uint32_t chosen = 0;
      for (uint32_t x = 0; x < u.n_expert; ++x) {
        const uint64_t v = u.routed[size_t{l} * u.n_expert + x];
        total += v;
        chosen += v > 0 ? 1 : 0;
      }
      EXPECT_EQ(total, uint64_t{26} * hp.n_expert_used) << "block " << l;
      EXPECT_GE(chosen, hp.n_expert / 2) << "block " << l;
    }
    ++ran;
  }
  EXPECT_GE(ran, 1);
}

TEST(MkmodelArchShapes, ShrunkenGptOssLoadsAndRuns) {
  write_load_run(shrunken("gpt-oss-20b", Arch::GptOss, 2), "gpt-oss-small.gguf");
}

TEST(MkmodelArchShapes, ShrunkenGlmLoadsAndRuns) {
  // glm-4.6's traits (q/k norms, 2.5 scaling), cut to 3 decoder blocks: 2 dense, 1 MoE, then the nextn block.
  const ModelSpec s = shrunken("glm-4.6", Arch::Glm4Moe, 3);
  EXPECT_EQ(s.n_layer_dense_lead, 2u);
  write_load_run(s, "glm-4.6-small.gguf");
  write_load_run(shrunken("glm-4.5-air", Arch::Glm4Moe, 2), "glm-4.5-air-small.gguf");
}

// The CLI writes a cut, narrowed gpt-oss shape with no --arch (the shape brings it) and mxfp4_moe by default.
TEST(MkmodelArchShapes, CliWritesANarrowedGptOssShape) {
  const std::string path = strata::testing_support::test_temp_path("mkmodel_arch", "cli-gpt-oss.gguf");
  const std::string cmd = std::string(STRATA_EXE) +
                          " mkmodel --shape gpt-oss-120b --layers 2 --embd 256 --heads 4 --kv-heads 2 --ff 256 "
                          "--expert-ff 256 --experts 8 --vocab 1000 --context 4096 --threads 2 --out " + path + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const strata::gguf::Model m = strata::gguf::Model::open(path);
  const HParams hp = strata::read_hparams(m.metadata());
  EXPECT_EQ(hp.arch, Arch::GptOss);
  EXPECT_EQ(hp.n_layer, 2u);
  EXPECT_EQ(hp.n_expert_used, 4u);
  EXPECT_EQ(hp.sliding_window, 128u);
  EXPECT_EQ(m.metadata().get_u32("general.file_type"), 38u);
  EXPECT_EQ(m.tensor("blk.1.ffn_down_exps.weight").type, GgmlType::MXFP4);
  EXPECT_TRUE(strata::check_tensors(hp, m).empty());
  const auto bad = std::string(STRATA_EXE) + " mkmodel --shape glm-4.6 --arch qwen3moe --out x.gguf >/dev/null 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
}

}  // namespace

namespace {

// Sum of the tensors of the blocks before `blocks` (and of the global tensors): the file llama.cpp's deepseek2
// converter writes, which drops the MTP block.
std::pair<uint64_t, uint64_t> bytes_and_params_before(const Plan& plan, uint32_t blocks) {
  uint64_t bytes = 0, params = 0;
  for (const auto& t : plan.tensors) {
    if (t.name.rfind("blk.", 0) == 0 && std::stoul(t.name.substr(4)) >= blocks) continue;
    uint64_t e = 1;
    for (uint64_t d : t.ne) e *= d;
    bytes += t.n_bytes;
    params += e;
  }
  return {bytes, params};
}

TEST(MkmodelArchShapes, DeepseekShapesBelongToDeepseek2) {
  EXPECT_EQ(strata::mkmodel::shape_arch("deepseek-v3"), Arch::Deepseek2);
  EXPECT_EQ(strata::mkmodel::shape_arch("kimi-k2"), Arch::Deepseek2);
  EXPECT_FALSE(strata::mkmodel::shape_preset("deepseek-v3", Arch::Glm4Moe).has_value());
  EXPECT_FALSE(strata::mkmodel::shape_preset("qwen3-30b-a3b", Arch::Deepseek2).has_value());
  EXPECT_TRUE(strata::mkmodel::shape_preset("tiny", Arch::Deepseek2).has_value());
  for (const char* name : {"deepseek-v3", "kimi-k2"}) {
    EXPECT_NE(strata::mkmodel::shape_names().find(name), std::string::npos) << name;
  }
}

// DeepSeek-V3 and Kimi-K2 as config.json gives them (sources in shapes.cpp), with llama.cpp's Q4_K_M: the MLA keys
// and tensors (attn_k_b rows of qk_nope 128 are no whole Q4_K blocks, so llama.cpp's fallback Q5_0; attn_v_b rows
// of kv_lora_rank 512 stay Q4_K), leading dense blocks, the nextn block of DeepSeek-V3, sigmoid gating with
// exp_probs_b. Sizes: without its MTP block (--nextn 0, as llama.cpp's converter writes it) DeepSeek-V3's plan is
// llama-bench's "deepseek2 671B Q4_K - Medium 376.65 GiB 671.03 B" (ik_llama.cpp issue #259, unsloth's DeepSeek-R1
// Q4_K_M, whose attn_kv_b was not split yet: its Q4_K/Q6_K kv_b against our Q5_0 k_b and Q4_K v_b differ by about
// 0.06 GiB); the MTP block adds DeepSeek's 11.5 B unique MTP parameters (README_WEIGHTS.md; embedding and head are
// shared) and eh_proj's 2 x 7168 x 7168. Kimi-K2's 1.026 T parameters are unsloth's Kimi-K2-Instruct-GGUF card's.
TEST(MkmodelArchShapes, DeepseekPlansAreThePublishedModels) {
  struct Want {
    const char* name;
    uint32_t heads, experts, dense_lead, nextn, vocab, context;
    float theta, factor, beta_fast, scale;
    uint64_t params_main_m;  // millions, rounded, without the nextn block
  };
  for (const Want& w : {Want{"deepseek-v3", 128, 256, 3, 1, 129280, 163840, 10000.0f, 40.0f, 32.0f, 2.5f, 671026},
                        Want{"kimi-k2", 64, 384, 1, 0, 163840, 131072, 50000.0f, 32.0f, 1.0f, 2.827f, 1026408}}) {
    SCOPED_TRACE(w.name);
    const ModelSpec s = shape(w.name, Arch::Deepseek2);
    EXPECT_EQ(s.quant, QuantPreset::Q4_K_M);
    const Plan plan = strata::mkmodel::plan_model(s);
    const HParams& hp = plan.hparams;
    EXPECT_EQ(hp.arch, Arch::Deepseek2);
    EXPECT_EQ(hp.n_layer, 61 + w.nextn);
    EXPECT_EQ(hp.n_layer_nextn, w.nextn);
    EXPECT_EQ(hp.n_layer_main(), 61u);
    EXPECT_EQ(hp.n_layer_dense_lead, w.dense_lead);
    EXPECT_EQ(hp.n_embd, 7168u);
    EXPECT_EQ(hp.n_ff, 18432u);
    EXPECT_EQ(hp.n_ff_exp, 2048u);
    EXPECT_EQ(hp.n_expert, w.experts);
    EXPECT_EQ(hp.n_expert_used, 8u);
    EXPECT_EQ(hp.n_expert_shared, 1u);
    EXPECT_EQ(hp.n_ff_shexp, 2048u);
    EXPECT_EQ(hp.n_head, w.heads);
    EXPECT_EQ(hp.n_head_kv, 1u);
    EXPECT_TRUE(hp.is_mla());
    EXPECT_EQ(hp.q_lora_rank, 1536u);
    EXPECT_EQ(hp.kv_lora_rank, 512u);
    EXPECT_EQ(hp.head_dim_k, 576u);
    EXPECT_EQ(hp.head_dim_v, 512u);
    EXPECT_EQ(hp.head_dim_k_mla, 192u);
    EXPECT_EQ(hp.head_dim_v_mla, 128u);
    EXPECT_EQ(hp.n_rot, 64u);
    EXPECT_EQ(hp.n_vocab, w.vocab);
    EXPECT_EQ(hp.n_ctx_train, w.context);
    EXPECT_FLOAT_EQ(hp.rope_freq_base, w.theta);
    EXPECT_EQ(hp.rope_scaling, strata::RopeScaling::Yarn);
    EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f / w.factor);
    EXPECT_EQ(hp.rope_orig_ctx, 4096u);
    EXPECT_FLOAT_EQ(hp.yarn_log_mul, 0.1f);
    EXPECT_FLOAT_EQ(hp.yarn_beta_fast, w.beta_fast);
    EXPECT_FLOAT_EQ(hp.yarn_beta_slow, 1.0f);
    EXPECT_FLOAT_EQ(hp.rms_eps, 1e-6f);
    EXPECT_EQ(hp.gating, strata::GatingFunc::Sigmoid);
    EXPECT_FLOAT_EQ(hp.expert_weights_scale, w.scale);
    EXPECT_TRUE(hp.expert_weights_norm);
    expect_arch_complete(plan);

    const auto t = by_name(plan);
    // 3 global tensors, 13 per dense block, 18 per MoE block, 21 in the nextn block.
    EXPECT_EQ(plan.tensors.size(), 3u + 13u * w.dense_lead + 18u * (61u - w.dense_lead) + 21u * w.nextn);
    EXPECT_EQ(t.count("blk.0.attn_kv_b.weight"), 0u);
    EXPECT_EQ(t.count("blk.0.ffn_gate_inp.weight"), 0u);
    EXPECT_EQ(t.at("blk.0.attn_k_b.weight")->ne, (std::vector<uint64_t>{128, 512, w.heads}));
    EXPECT_EQ(t.at("blk.0.attn_v_b.weight")->ne, (std::vector<uint64_t>{512, 128, w.heads}));
    const std::string moe = "blk." + std::to_string(w.dense_lead) + ".";
    EXPECT_EQ(t.count(moe + "ffn_gate.weight"), 0u);
    EXPECT_EQ(t.count(moe + "exp_probs_b.bias"), 1u);
    EXPECT_EQ(t.count(moe + "ffn_gate_up_exps.weight"), 0u);
    EXPECT_EQ(t.count("blk.61.nextn.eh_proj.weight"), w.nextn);
    EXPECT_EQ(t.count("blk.61.ffn_down_exps.weight"), w.nextn);
    EXPECT_EQ(t.count("blk.61.nextn.shared_head_head.weight"), 0u);

    EXPECT_EQ(t.at("token_embd.weight")->type, GgmlType::Q4_K);
    EXPECT_EQ(t.at("output.weight")->type, GgmlType::Q6_K);
    for (const char* m : {"attn_q_a.weight", "attn_q_b.weight", "attn_kv_a_mqa.weight", "attn_v_b.weight",
                          "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"}) {
      EXPECT_EQ(t.at(std::string("blk.0.") + m)->type, GgmlType::Q4_K) << m;
    }
    EXPECT_EQ(t.at("blk.0.attn_k_b.weight")->type, GgmlType::Q5_0);
    EXPECT_EQ(t.at("blk.0.ffn_down.weight")->type, GgmlType::Q6_K);  // a 'more bits' layer
    EXPECT_EQ(t.at(moe + "ffn_gate_exps.weight")->type, GgmlType::Q4_K);
    EXPECT_EQ(t.at(moe + "ffn_down_exps.weight")->type, GgmlType::Q6_K);
    EXPECT_EQ(t.at(moe + "ffn_down_shexp.weight")->type, GgmlType::Q6_K);
    EXPECT_EQ(t.at("blk.20.ffn_down_exps.weight")->type, GgmlType::Q4_K);
    for (const char* f : {"exp_probs_b.bias", "ffn_gate_inp.weight", "attn_q_a_norm.weight", "attn_kv_a_norm.weight",
                          "ffn_norm.weight"}) {
      EXPECT_EQ(t.at(moe + f)->type, GgmlType::F32) << moe + f;
    }
    if (w.nextn > 0) {
      EXPECT_EQ(t.at("blk.61.nextn.eh_proj.weight")->type, GgmlType::Q4_K);
    }

    const auto [main_bytes, main_params] = bytes_and_params_before(plan, 61);
    EXPECT_EQ((main_params + 500000) / 1000000, w.params_main_m);
    if (w.nextn > 0) {
      // DeepSeek-V3's 671 B main model and its MTP block: 11.5 B unique parameters plus eh_proj's 0.1 B.
      EXPECT_NEAR(static_cast<double>(main_params) / 1e9, 671.03, 0.005);
      EXPECT_NEAR(static_cast<double>(parameters(plan) - main_params) / 1e9, 11.6, 0.1);
      // The file llama.cpp's converter writes (--nextn 0): 61 blocks, so the 'more bits' layers are those of 61.
      ModelSpec no_mtp = s;
      no_mtp.n_layer_nextn = 0;
      const Plan converted = strata::mkmodel::plan_model(no_mtp);
      EXPECT_EQ(converted.hparams.n_layer, 61u);
      EXPECT_EQ(parameters(converted), main_params);
      EXPECT_NEAR(static_cast<double>(tensor_bytes(converted)) / (1ull << 30), 376.65, 0.1);
    } else {
      EXPECT_NEAR(static_cast<double>(main_params) / 1e12, 1.026, 0.0005);
    }
  }
}

// llama.cpp's Q2_K over DeepSeek-V3: Q2_K, Q3_K for every ffn_down and attn_output, Q6_K output; attn_k_b's
// 128-value rows take Q2_K's fallback Q4_0.
TEST(MkmodelArchShapes, DeepseekQ2KRecipe) {
  ModelSpec s = shape("deepseek-v3", Arch::Deepseek2);
  s.quant = QuantPreset::Q2_K;
  const Plan plan = strata::mkmodel::plan_model(s);
  const auto t = by_name(plan);
  EXPECT_EQ(t.at("token_embd.weight")->type, GgmlType::Q2_K);
  EXPECT_EQ(t.at("output.weight")->type, GgmlType::Q6_K);
  EXPECT_EQ(t.at("blk.0.attn_q_b.weight")->type, GgmlType::Q2_K);
  EXPECT_EQ(t.at("blk.0.attn_k_b.weight")->type, GgmlType::Q4_0);
  EXPECT_EQ(t.at("blk.0.attn_v_b.weight")->type, GgmlType::Q2_K);
  EXPECT_EQ(t.at("blk.0.attn_output.weight")->type, GgmlType::Q3_K);
  EXPECT_EQ(t.at("blk.0.ffn_down.weight")->type, GgmlType::Q3_K);
  EXPECT_EQ(t.at("blk.5.ffn_down_exps.weight")->type, GgmlType::Q3_K);
  EXPECT_EQ(t.at("blk.5.ffn_gate_exps.weight")->type, GgmlType::Q2_K);
  EXPECT_EQ(t.at("blk.5.ffn_up_shexp.weight")->type, GgmlType::Q2_K);
  EXPECT_EQ(t.at("blk.5.ffn_gate_inp.weight")->type, GgmlType::F32);
  EXPECT_EQ(strata::mkmodel::preset_info(QuantPreset::Q2_K).file_type, 10u);
  EXPECT_LT(plan.file_bytes, strata::mkmodel::plan_model(shape("deepseek-v3", Arch::Deepseek2)).file_bytes * 2 / 3);
}

std::string run_cli(const std::string& args, int* status) {
  const std::string cmd = std::string(STRATA_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

// --layers N on deepseek2: N decoder blocks, DeepSeek-V3's nextn block after them, at most N - 1 dense blocks;
// --nextn 0 drops the MTP block as llama.cpp's converter does. The CLI cuts the same way.
TEST(MkmodelArchShapes, DeepseekLayerCuts) {
  struct Cut {
    const char* name;
    uint32_t n, blocks, dense_lead;
  };
  for (const Cut& c : {Cut{"deepseek-v3", 2, 3, 1}, Cut{"deepseek-v3", 1, 2, 0}, Cut{"deepseek-v3", 5, 6, 3},
                       Cut{"kimi-k2", 1, 1, 0}, Cut{"kimi-k2", 3, 3, 1}}) {
    SCOPED_TRACE(std::string(c.name) + " --layers " + std::to_string(c.n));
    ModelSpec s = shape(c.name, Arch::Deepseek2);
    strata::mkmodel::set_layers(s, c.n);
    const Plan plan = strata::mkmodel::plan_model(s);
    EXPECT_EQ(plan.hparams.n_layer, c.blocks);
    EXPECT_EQ(plan.hparams.n_layer_dense_lead, c.dense_lead);
    EXPECT_TRUE(plan.hparams.layer_has_experts(c.n - 1));
    expect_arch_complete(plan);
  }
  for (const auto& [args, nextn] : {std::pair<std::string, uint32_t>{"--shape deepseek-v3 --layers 4", 1},
                                    std::pair<std::string, uint32_t>{"--shape deepseek-v3 --layers 4 --nextn 0", 0},
                                    std::pair<std::string, uint32_t>{"--shape kimi-k2 --layers 2", 0}}) {
    SCOPED_TRACE(args);
    int status = -1;
    const std::string out = run_cli("mkmodel " + args + " --dry-run", &status);
    EXPECT_EQ(status, 0) << out;
    ModelSpec s = shape(args.find("kimi") != std::string::npos ? "kimi-k2" : "deepseek-v3", Arch::Deepseek2);
    strata::mkmodel::set_layers(s, args.find("kimi") != std::string::npos ? 2 : 4);
    s.n_layer_nextn = nextn;
    const Plan plan = strata::mkmodel::plan_model(s);
    EXPECT_NE(out.find(std::to_string(plan.tensors.size()) + " tensors\n"), std::string::npos) << out;
  }
  // Groups that cannot hold the experts asked for are refused by name.
  int status = 0;
  const std::string out = run_cli("mkmodel --shape deepseek-v3 --experts 8 --dry-run", &status);
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("groups"), std::string::npos) << out;
}

// deepseek2 with small widths: the same keys, tensors and types (rows of 256 where the real ones are multiples of
// 256, attn_k_b rows of 128 as the real ones).
ModelSpec shrunken_deepseek(const char* name, uint32_t layers) {
  ModelSpec s = shape(name, Arch::Deepseek2);
  strata::mkmodel::set_layers(s, layers);
  s.n_embd = 256;
  s.n_head = 4;
  s.q_lora_rank = 256;
  s.kv_lora_rank = 256;
  s.n_ff = 512;
  s.n_ff_exp = 256;
  s.n_expert = 16;
  s.n_vocab = 1000;
  s.n_ctx = 4096;
  return s;
}

void expect_deepseek_keys(const ModelSpec& s, const std::string& file) {
  const std::string path = strata::testing_support::test_temp_path("mkmodel_arch", file);
  const strata::gguf::Model m = strata::gguf::Model::open(path);
  const auto& md = m.metadata();
  EXPECT_EQ(md.get_u32("deepseek2.attention.head_count_kv"), 1u);
  EXPECT_EQ(md.get_u32("deepseek2.attention.key_length"), s.kv_lora_rank + 64);
  EXPECT_EQ(md.get_u32("deepseek2.attention.value_length"), s.kv_lora_rank);
  EXPECT_EQ(md.get_u32("deepseek2.attention.key_length_mla"), 192u);
  EXPECT_EQ(md.get_u32("deepseek2.attention.value_length_mla"), 128u);
  EXPECT_EQ(md.get_u32("deepseek2.expert_gating_func"), 2u);
  EXPECT_EQ(md.get_u32("deepseek2.expert_group_count"), s.n_expert_groups);
  EXPECT_EQ(md.get_u32("deepseek2.expert_group_used_count"), s.n_group_used);
  EXPECT_EQ(md.get_u32("deepseek2.vocab_size"), s.n_vocab);
  EXPECT_FLOAT_EQ(md.get_f32("deepseek2.rope.scaling.yarn_log_multiplier"), 0.1f);
  EXPECT_EQ(m.tensor("blk.0.attn_k_b.weight").type, GgmlType::Q5_0);
  EXPECT_EQ(m.tensor("blk.0.attn_v_b.weight").type, GgmlType::Q4_K);
}

TEST(MkmodelArchShapes, ShrunkenDeepseekV3LoadsAndRuns) {
  // DeepSeek-V3's traits cut to 3 decoder blocks (2 dense, 1 MoE) and its nextn block; 16 experts in its 8 groups,
  // 4 used (cpu_avx2's ROUTER refuses expert groups, so the engine computes that op where it is defined).
  const ModelSpec s = shrunken_deepseek("deepseek-v3", 3);
  EXPECT_EQ(s.n_layer_dense_lead, 2u);
  write_load_run(s, "deepseek-v3-small.gguf");
  expect_deepseek_keys(s, "deepseek-v3-small.gguf");
  ModelSpec q2 = shrunken_deepseek("deepseek-v3", 2);
  q2.quant = QuantPreset::Q2_K;
  write_load_run(q2, "deepseek-v3-small-q2k.gguf");
}

TEST(MkmodelArchShapes, ShrunkenKimiK2LoadsAndRuns) {
  // Kimi-K2 has no expert groups (n_group 1) and no nextn block.
  const ModelSpec s = shrunken_deepseek("kimi-k2", 3);
  write_load_run(s, "kimi-k2-small.gguf");
  expect_deepseek_keys(s, "kimi-k2-small.gguf");
}

// The CLI writes a cut, narrowed Kimi-K2 with no --arch (the shape brings it).
TEST(MkmodelArchShapes, CliWritesANarrowedKimiShape) {
  const std::string path = strata::testing_support::test_temp_path("mkmodel_arch", "cli-kimi.gguf");
  int status = -1;
  const std::string out = run_cli("mkmodel --shape kimi-k2 --layers 2 --embd 256 --heads 4 --ff 512 --expert-ff 256 "
                                  "--experts 16 --vocab 1000 --context 4096 --threads 2 --out " + path, &status);
  ASSERT_EQ(status, 0) << out;
  const strata::gguf::Model m = strata::gguf::Model::open(path);
  const HParams hp = strata::read_hparams(m.metadata());
  EXPECT_EQ(hp.arch, Arch::Deepseek2);
  EXPECT_EQ(hp.n_layer, 2u);
  EXPECT_EQ(hp.n_layer_dense_lead, 1u);
  EXPECT_EQ(hp.q_lora_rank, 1536u);
  EXPECT_EQ(m.metadata().get_u32("general.file_type"), 15u);
  EXPECT_TRUE(strata::check_tensors(hp, m).empty());
}

}  // namespace
