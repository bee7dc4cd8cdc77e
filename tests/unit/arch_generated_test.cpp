// Architectures and forms with no llama.cpp reference file, checked on generated models (arch_random_model.hpp).
//
// glm4moe with a trailing nextn (MTP) block, as real GLM-4.5 files have (the reference file has none): it loads,
// the block is skipped, and the logits are byte for byte those of the same model without that block.
//
// qwen2moe has no llama.cpp reference file (../shared/data/arch has none, and `strata mkmodel` has no qwen2moe
// shape): a tiny one is generated here from the architecture's own tensor list (arch.hpp), random F32 weights, with
// stories260K's vocabulary. Checks: it loads and runs; every backend under test gives the reference backend's
// logits (canonical arithmetic: NMSE <= 1e-10); the gated shared expert counts (a zero gate or a zero down
// projection change the logits); the hybrid path (a stand-in GPU caching a quarter of the routed experts, the
// shared expert and its gate with the dense weights) and the all-on-device path give the plain cpu_avx2 bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "arch_random_model.hpp"
#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/arch.hpp"
#include "strata/config.hpp"
#include "strata/gguf.hpp"
#include "strata/hparams.hpp"

namespace {

using strata::TokenId;

// The model as generated; its shared gate's weights zero (every token's shared weight sigmoid(0) = 0.5); its shared
// down projection zero (the shared expert adds zero).
enum class SharedGate { Model, Half, ZeroDown };

// A qwen2moe of 2 layers, n_embd 64, 4 heads of 16 (2 KV heads), 8 experts of 32, top-2, a shared expert of 48.
std::string write_qwen2moe(SharedGate gate) {
  const std::string name = gate == SharedGate::Model ? "model" : gate == SharedGate::Half ? "half" : "zero_down";
  return strata::test::write_random_model(
      "qwen2moe-" + name + ".gguf",
      [](strata::gguf::Writer& w) {
        w.set_string("general.architecture", "qwen2moe");
        w.set_u32("qwen2moe.context_length", 256);
        w.set_u32("qwen2moe.embedding_length", 64);
        w.set_u32("qwen2moe.block_count", 2);
        w.set_u32("qwen2moe.feed_forward_length", 96);
        w.set_u32("qwen2moe.attention.head_count", 4);
        w.set_u32("qwen2moe.attention.head_count_kv", 2);
        w.set_f32("qwen2moe.rope.freq_base", 1e6f);
        w.set_f32("qwen2moe.attention.layer_norm_rms_epsilon", 1e-6f);
        w.set_u32("qwen2moe.expert_count", 8);
        w.set_u32("qwen2moe.expert_used_count", 2);
        w.set_u32("qwen2moe.expert_feed_forward_length", 32);
        w.set_u32("qwen2moe.expert_shared_feed_forward_length", 48);
      },
      [gate](const std::string& tensor, std::vector<float>& v) {
        if (gate == SharedGate::Half && tensor.find("ffn_gate_inp_shexp") != std::string::npos) {
          std::fill(v.begin(), v.end(), 0.0f);
        }
        if (gate == SharedGate::ZeroDown && tensor.find("ffn_down_shexp") != std::string::npos) {
          std::fill(v.begin(), v.end(), 0.0f);
        }
      });
}

const std::string& qwen2moe(SharedGate g) {
  static const std::string model = write_qwen2moe(SharedGate::Model);
  static const std::string half = write_qwen2moe(SharedGate::Half);
  static const std::string zero_down = write_qwen2moe(SharedGate::ZeroDown);
  return g == SharedGate::Model ? model : g == SharedGate::Half ? half : zero_down;
}

strata::EngineSettings settings() {
  strata::EngineSettings s;
  s.context = 256;
  s.batch = 64;
  s.max_window_logits = 24;
  s.threads = 2;
  return s;
}

// A 24-token window with every logit, then 8 greedy tokens one by one.
std::vector<float> run(strata::Engine& e) {
  std::vector<TokenId> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(static_cast<TokenId>((i * 37 + 5) % 512));
  const std::span<const float> all = e.feed_window(0, tokens);
  std::vector<float> out(all.begin(), all.end());
  const size_t n_vocab = e.model().hparams().n_vocab;
  std::span<const float> last = all.subspan(all.size() - n_vocab);
  for (int s = 0; s < 8; ++s) {
    const auto next = static_cast<TokenId>(std::max_element(last.begin(), last.end()) - last.begin());
    last = e.feed(0, std::span<const TokenId>(&next, 1));
    out.insert(out.end(), last.begin(), last.end());
  }
  return out;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double e = 0.0, n = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    e += d * d;
    n += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return e / n;
}

TEST(ArchQwen2Moe, EveryBackendGivesTheReferenceLogits) {
  auto ref = strata::test::open_engine(qwen2moe(SharedGate::Model), "reference", settings());
  EXPECT_EQ(ref->model().hparams().arch, strata::Arch::Qwen2Moe);
  ASSERT_NE(ref->model().weights().layers[0].shared.gate_inp, nullptr);
  const std::vector<float> want = run(*ref);
  for (float v : want) ASSERT_TRUE(std::isfinite(v));
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    if (backend == "reference") continue;
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(qwen2moe(SharedGate::Model), backend, settings());
    const std::vector<float> got = run(*e);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LE(nmse(got, want), 1e-10);
    std::cout << "qwen2moe on " << backend << ": NMSE against the reference " << nmse(got, want) << ", bytes "
              << (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0 ? "equal" : "differ") << "\n";
    ++ran;
  }
  if (ran == 0) std::cout << "qwen2moe: no backend besides the reference is usable here\n";
}

// The shared expert and its gate count: a zero down projection (the shared expert adds zero) and a zero gate (every
// token's shared weight 0.5) each give other logits than the model, and each other.
TEST(ArchQwen2Moe, TheSharedExpertAndItsGateCount) {
  auto model = strata::test::open_engine(qwen2moe(SharedGate::Model), "reference", settings());
  auto zero = strata::test::open_engine(qwen2moe(SharedGate::ZeroDown), "reference", settings());
  auto half = strata::test::open_engine(qwen2moe(SharedGate::Half), "reference", settings());
  const std::vector<float> m = run(*model), z = run(*zero), h = run(*half);
  EXPECT_GT(nmse(z, m), 1e-6) << "the shared expert changes nothing";
  EXPECT_GT(nmse(h, m), 1e-6) << "the shared expert's gate changes nothing";
  EXPECT_GT(nmse(h, z), 1e-6);
  for (float v : z) ASSERT_TRUE(std::isfinite(v));
}

TEST(ArchQwen2Moe, HybridEqualsThePlainCpuEngine) {
  const std::vector<std::string> backends = strata::test::backends_under_test();
  if (std::find(backends.begin(), backends.end(), "cpu_avx2") == backends.end()) {
    GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  }
  const std::string& path = qwen2moe(SharedGate::Model);
  std::vector<float> plain;
  {
    auto e = strata::test::open_engine(path, "cpu_avx2", settings());
    plain = run(*e);
  }
  for (const bool fast : {true, false}) {
    SCOPED_TRACE(fast ? "fast mode" : "simple mode");
    strata::EngineSettings s = settings();
    s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
    s.experts.cache.percent = 25;
    s.experts.pcie_frac = 0.5;
    s.graphs = fast;
    auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
    auto e = std::make_unique<strata::Engine>(strata::Model::load(path), std::move(gpu), s,
                                              strata::test::built_plugins().instantiate("cpu_avx2"));
    ASSERT_TRUE(e->hybrid());
    ASSERT_NE(e->device_weights()->shared_table(0), nullptr);
    const std::vector<float> got = run(*e);
    ASSERT_EQ(got.size(), plain.size());
    EXPECT_EQ(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)), 0);
  }
  // Every weight on the (stand-in) device: MOE_ROUTED over the one-entry shared table, no host step.
  {
    strata::EngineSettings s = settings();
    auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
    auto e = std::make_unique<strata::Engine>(strata::Model::load(path), std::move(gpu), s);
    ASSERT_FALSE(e->hybrid());
    ASSERT_NE(e->device_weights(), nullptr);
    const std::vector<float> got = run(*e);
    EXPECT_EQ(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)), 0);
  }
}

// glm4moe: 2 layers (the first dense) with or without a third, MTP, block; n_embd 64, 4 heads of 32 (2 KV heads),
// partial rotary 16 of 32, 8 experts of 32, top-2, one shared expert, sigmoid routing with its bias.
std::string write_glm4moe(bool nextn, bool mrope = false) {
  const std::string name = mrope ? "glm4moe-mrope.gguf" : nextn ? "glm4moe-nextn.gguf" : "glm4moe-plain.gguf";
  return strata::test::write_random_model(name, [nextn, mrope](strata::gguf::Writer& w) {
    if (mrope) {
      const std::vector<int32_t> sections = {8, 8, 0, 0};
      w.set_array("glm4moe.rope.dimension_sections", std::span<const int32_t>(sections));
    }
    w.set_string("general.architecture", "glm4moe");
    w.set_u32("glm4moe.context_length", 256);
    w.set_u32("glm4moe.embedding_length", 64);
    w.set_u32("glm4moe.block_count", nextn ? 3 : 2);
    w.set_u32("glm4moe.nextn_predict_layers", nextn ? 1 : 0);
    w.set_u32("glm4moe.feed_forward_length", 96);
    w.set_u32("glm4moe.attention.head_count", 4);
    w.set_u32("glm4moe.attention.head_count_kv", 2);
    w.set_u32("glm4moe.attention.key_length", 32);
    w.set_u32("glm4moe.attention.value_length", 32);
    w.set_u32("glm4moe.rope.dimension_count", 16);
    w.set_f32("glm4moe.rope.freq_base", 1e6f);
    w.set_f32("glm4moe.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("glm4moe.expert_count", 8);
    w.set_u32("glm4moe.expert_used_count", 2);
    w.set_u32("glm4moe.expert_shared_count", 1);
    w.set_u32("glm4moe.expert_feed_forward_length", 32);
    w.set_u32("glm4moe.leading_dense_block_count", 1);
    w.set_u32("glm4moe.expert_gating_func", 2);
    w.set_f32("glm4moe.expert_weights_scale", 2.5f);
    w.set_bool("glm4moe.expert_weights_norm", true);
  });
}

TEST(ArchGlm4Moe, TheNextnBlockIsRecognisedAndSkipped) {
  const std::string with = write_glm4moe(true), without = write_glm4moe(false);
  {
    const strata::gguf::Model file = strata::gguf::Model::open(with);
    EXPECT_NE(file.find_tensor("blk.2.nextn.eh_proj.weight"), nullptr);
    EXPECT_NE(file.find_tensor("blk.2.ffn_gate_exps.weight"), nullptr);
  }
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto a = strata::test::open_engine(with, backend, settings());
    auto b = strata::test::open_engine(without, backend, settings());
    EXPECT_EQ(a->model().hparams().n_layer, 3u);
    EXPECT_EQ(a->model().hparams().n_layer_main(), 2u);
    EXPECT_FALSE(a->model().weights().layers[2].has_experts()) << "the MTP block is bound to nothing";
    EXPECT_TRUE(a->model().weights().layers[1].has_experts());
    EXPECT_NE(a->model().weights().layers[1].shared.gate, nullptr);
    const std::vector<float> got = run(*a), want = run(*b);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
    for (float v : got) ASSERT_TRUE(std::isfinite(v));
  }
}

// A glm4moe whose file asks for M-RoPE (rope.dimension_sections, the multimodal variants): refused by name rather
// than computed with plain neox RoPE.
TEST(ArchGlm4Moe, MultimodalRopeSectionsAreRefused) {
  try {
    strata::Model::load(write_glm4moe(false, true));
    ADD_FAILURE() << "a glm4moe with rope.dimension_sections loaded";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope.dimension_sections"), std::string::npos) << e.what();
  }
}

}  // namespace
