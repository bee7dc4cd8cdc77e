// Architectures and forms with no llama.cpp reference file, checked on generated models (arch_random_model.hpp).
//
// glm4moe with a trailing nextn (MTP) block, as real GLM-4.5 files have (the reference file has none): it loads,
// the block is skipped, and the logits are byte for byte those of the same model without that block.
//
// qwen2moe has no llama.cpp reference file (../shared/data/arch has none, and `strata mkmodel` has no qwen2moe
// shape): a tiny one is generated here from the architecture's own tensor list (arch.hpp), random F32 weights, with
// stories260K's vocabulary. Checks: the reference backend agrees with a double forward pass written in this file
// from llama.cpp's qwen2moe graph (NMSE <= 1e-4 with the F16 KV cache, every argmax); every backend under test
// gives the reference backend's logits (canonical arithmetic: NMSE <= 1e-10); the gated shared expert counts (a
// zero gate or a zero down projection change the logits); the hybrid path (a stand-in GPU caching a quarter of the routed experts, the
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
#include "stand_in_engine.hpp"
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

// qwen2moe as llama.cpp's graph computes it (src/models/qwen2moe.cpp), in double, written from that description and
// not from Strata's ops: attn_norm; q/k/v with biases; neox RoPE on whole heads; causal GQA softmax attention with
// scale 1/sqrt(head_dim); attn_output; ffn_norm; softmax over the router logits, the top k by probability (ties to
// the lower id), weights the k probabilities as they are; each expert down(silu(gate h) * up h); plus
// sigmoid(ffn_gate_inp_shexp . h) * down_sh(silu(gate_sh h) * up_sh h); output_norm and the head. Every position's
// logits, [n_vocab] each.
std::vector<double> qwen2moe_f64(const std::string& path, const std::vector<TokenId>& tokens) {
  const strata::gguf::Model f = strata::gguf::Model::open(path);
  const strata::HParams hp = strata::read_hparams(f.metadata());
  const auto w = [&](const std::string& name) { return reinterpret_cast<const float*>(f.tensor(name).data); };
  const auto blk = [](uint32_t il, const char* stem) { return "blk." + std::to_string(il) + "." + stem; };
  const size_t n_embd = hp.n_embd, hd = hp.head_dim_k, n_head = hp.n_head, n_kv = hp.n_head_kv;
  const size_t T = tokens.size(), n_vocab = hp.n_vocab;
  using Vec = std::vector<double>;
  const auto matvec = [](const float* m, size_t in, size_t out, const Vec& x) {
    Vec y(out, 0.0);
    for (size_t r = 0; r < out; ++r) {
      for (size_t i = 0; i < in; ++i) y[r] += static_cast<double>(m[r * in + i]) * x[i];
    }
    return y;
  };
  const auto rms = [&](const Vec& x, const float* g, size_t n, size_t off = 0) {
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(n) + static_cast<double>(hp.rms_eps));
    Vec y(n);
    for (size_t i = 0; i < n; ++i) y[i] = x[off + i] * r * static_cast<double>(g[i]);
    return y;
  };
  const auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  const auto ffn = [&](const float* g, const float* u, const float* d, size_t n_ff, const Vec& h) {
    const Vec a = matvec(g, n_embd, n_ff, h), b = matvec(u, n_embd, n_ff, h);
    Vec m(n_ff);
    for (size_t i = 0; i < n_ff; ++i) m[i] = silu(a[i]) * b[i];
    return matvec(d, n_ff, n_embd, m);
  };
  std::vector<Vec> x(T, Vec(n_embd));
  for (size_t t = 0; t < T; ++t) {
    for (size_t i = 0; i < n_embd; ++i) {
      x[t][i] = static_cast<double>(w("token_embd.weight")[static_cast<size_t>(tokens[t]) * n_embd + i]);
    }
  }
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    std::vector<Vec> q(T), k(T), v(T);
    for (size_t t = 0; t < T; ++t) {
      const Vec h = rms(x[t], w(blk(il, "attn_norm.weight")), n_embd);
      q[t] = matvec(w(blk(il, "attn_q.weight")), n_embd, n_head * hd, h);
      k[t] = matvec(w(blk(il, "attn_k.weight")), n_embd, n_kv * hd, h);
      v[t] = matvec(w(blk(il, "attn_v.weight")), n_embd, n_kv * hd, h);
      for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += static_cast<double>(w(blk(il, "attn_q.bias"))[i]);
      for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += static_cast<double>(w(blk(il, "attn_k.bias"))[i]);
      for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += static_cast<double>(w(blk(il, "attn_v.bias"))[i]);
      for (Vec* qk : {&q[t], &k[t]}) {
        for (size_t head = 0; head < qk->size() / hd; ++head) {
          for (size_t i = 0; i < hd / 2; ++i) {
            const double theta = static_cast<double>(t) *
                                 std::pow(static_cast<double>(hp.rope_freq_base), -2.0 * static_cast<double>(i) / hd);
            double& a = (*qk)[head * hd + i];
            double& b = (*qk)[head * hd + i + hd / 2];
            const double a0 = a, b0 = b;
            a = a0 * std::cos(theta) - b0 * std::sin(theta);
            b = a0 * std::sin(theta) + b0 * std::cos(theta);
          }
        }
      }
    }
    for (size_t t = 0; t < T; ++t) {
      Vec att(n_head * hd, 0.0);
      for (size_t h = 0; h < n_head; ++h) {
        const size_t g = h / (n_head / n_kv);
        Vec s(t + 1);
        double m = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          double d = 0.0;
          for (size_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][g * hd + i];
          s[j] = d / std::sqrt(static_cast<double>(hd));
          m = std::max(m, s[j]);
        }
        double total = 0.0;
        for (double& e : s) total += e = std::exp(e - m);
        for (size_t j = 0; j <= t; ++j) {
          for (size_t i = 0; i < hd; ++i) att[h * hd + i] += s[j] / total * v[j][g * hd + i];
        }
      }
      const Vec o = matvec(w(blk(il, "attn_output.weight")), n_head * hd, n_embd, att);
      for (size_t i = 0; i < n_embd; ++i) x[t][i] += o[i];
    }
    for (size_t t = 0; t < T; ++t) {
      const Vec h = rms(x[t], w(blk(il, "ffn_norm.weight")), n_embd);
      const Vec logit = matvec(w(blk(il, "ffn_gate_inp.weight")), n_embd, hp.n_expert, h);
      const double m = *std::max_element(logit.begin(), logit.end());
      Vec p(hp.n_expert);
      double total = 0.0;
      for (size_t e = 0; e < p.size(); ++e) total += p[e] = std::exp(logit[e] - m);
      for (double& e : p) e /= total;
      std::vector<size_t> order(p.size());
      for (size_t e = 0; e < order.size(); ++e) order[e] = e;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
      Vec out(n_embd, 0.0);
      const size_t n_ff = hp.n_ff_exp;
      for (size_t j = 0; j < hp.n_expert_used; ++j) {
        const size_t e = order[j];
        const Vec y = ffn(w(blk(il, "ffn_gate_exps.weight")) + e * n_ff * n_embd,
                          w(blk(il, "ffn_up_exps.weight")) + e * n_ff * n_embd,
                          w(blk(il, "ffn_down_exps.weight")) + e * n_embd * n_ff, n_ff, h);
        for (size_t i = 0; i < n_embd; ++i) out[i] += p[e] * y[i];
      }
      const double gate = 1.0 / (1.0 + std::exp(-matvec(w(blk(il, "ffn_gate_inp_shexp.weight")), n_embd, 1, h)[0]));
      const Vec y = ffn(w(blk(il, "ffn_gate_shexp.weight")), w(blk(il, "ffn_up_shexp.weight")),
                        w(blk(il, "ffn_down_shexp.weight")), hp.n_ff_shexp, h);
      for (size_t i = 0; i < n_embd; ++i) x[t][i] += out[i] + gate * y[i];
    }
  }
  Vec logits;
  for (size_t t = 0; t < T; ++t) {
    const Vec l = matvec(w("output.weight"), n_embd, n_vocab, rms(x[t], w("output_norm.weight"), n_embd));
    logits.insert(logits.end(), l.begin(), l.end());
  }
  return logits;
}

// The reference backend against that double computation: every logit of a 24-token window (F16 KV cache: NMSE
// within 1e-4, as for the llama.cpp files), the argmax at every position.
TEST(ArchQwen2Moe, TheReferenceBackendAgreesWithADoubleForwardPass) {
  std::vector<TokenId> tokens;
  for (int i = 0; i < 24; ++i) tokens.push_back(static_cast<TokenId>((i * 37 + 5) % 512));
  const std::vector<double> want = qwen2moe_f64(qwen2moe(SharedGate::Model), tokens);
  auto e = strata::test::open_engine(qwen2moe(SharedGate::Model), "reference", settings());
  const std::span<const float> got = e->feed_window(0, tokens);
  ASSERT_EQ(got.size(), want.size());
  const size_t n_vocab = e->model().hparams().n_vocab;
  double err = 0.0, norm = 0.0, max_d = 0.0;
  int argmax_differs = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    size_t a = 0, b = 0;
    for (size_t v = 0; v < n_vocab; ++v) {
      const double d = static_cast<double>(got[p * n_vocab + v]) - want[p * n_vocab + v];
      err += d * d;
      norm += want[p * n_vocab + v] * want[p * n_vocab + v];
      max_d = std::max(max_d, std::abs(d));
      if (got[p * n_vocab + v] > got[p * n_vocab + a]) a = v;
      if (want[p * n_vocab + v] > want[p * n_vocab + b]) b = v;
    }
    if (a != b) ++argmax_differs;
  }
  std::cout << "qwen2moe reference backend against the double forward pass: NMSE " << err / norm << ", max |d| "
            << max_d << ", argmax differs at " << argmax_differs << " of " << tokens.size() << " positions\n";
  EXPECT_LE(err / norm, 1e-4);
  EXPECT_EQ(argmax_differs, 0);
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
    auto e = strata::test::open_stand_in_engine(path, s);
    ASSERT_TRUE(e->hybrid());
    ASSERT_NE(e->device_weights()->shared_table(0), nullptr);
    const std::vector<float> got = run(*e);
    ASSERT_EQ(got.size(), plain.size());
    EXPECT_EQ(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)), 0);
  }
  // Every weight on the (stand-in) device: MOE_ROUTED over the one-entry shared table, no host step.
  {
    strata::EngineSettings s = settings();
    auto e = strata::test::open_stand_in_engine(path, s, /*pool=*/false);
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
