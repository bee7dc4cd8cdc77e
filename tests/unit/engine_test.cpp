// The engine's window path on every backend: a prompt fed as one window gives the logits of feeding it token by
// token; a slot cut back and decoded again gives what a fresh slot gives; a Q8_0 KV cache stays close to F16;
// a generated qwen3moe model runs; models the engine cannot run are refused by name; and resident memory stays
// within the model file plus the KV cache plus 5%.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "strata/error.hpp"
#include "strata/generate.hpp"
#include "strata/mkmodel.hpp"
#include "strata/process_memory.hpp"
#include "strata/reference_backend.hpp"

namespace {

using strata::TokenId;
namespace fs = std::filesystem;

std::string stories() { return strata::test::models_dir() + "/stories260K.gguf"; }

strata::EngineSettings small(uint32_t batch = 512, strata::format::GgmlType kv = strata::format::GgmlType::F16) {
  strata::EngineSettings s;
  s.context = 256;
  s.batch = batch;
  s.kv_type = kv;
  return s;
}

// The story's first 40 greedy ids (BOS, "Once upon a time", then run.c's continuation).
std::vector<TokenId> story_ids(strata::Engine& e) {
  strata::GenerateOptions opt;
  opt.n_predict = 35;
  const strata::GenerateResult r = strata::generate(e, 0, "Once upon a time", opt);
  std::vector<TokenId> ids = r.prompt_ids;
  ids.insert(ids.end(), r.generated_ids.begin(), r.generated_ids.end());
  return ids;
}

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    d += (x - y) * (x - y);
    n += y * y;
  }
  return std::sqrt(d / n);
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("strata-engine-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST(Engine, OneWindowEqualsTokenByToken) {
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(stories(), backend, small());
    const std::vector<TokenId> ids = story_ids(*e);
    e->cut(0, 0);
    const std::vector<float> whole = copy(e->feed(0, ids));
    e->cut(0, 0);
    std::vector<float> single;
    for (TokenId id : ids) single = copy(e->feed(0, std::span<const TokenId>(&id, 1)));
    // The reference computes every column on its own: the bits agree. A plugin may batch differently.
    if (backend == "reference") {
      EXPECT_EQ(0, std::memcmp(whole.data(), single.data(), whole.size() * sizeof(float)));
    } else {
      EXPECT_LT(relative_l2(single, whole), 1e-4);
    }
    // Prefill chunks of 7 tokens take the same path.
    auto chunked = strata::test::open_engine(stories(), backend, small(7));
    const std::vector<float> in_chunks = copy(chunked->feed(0, ids));
    if (backend == "reference") {
      EXPECT_EQ(0, std::memcmp(whole.data(), in_chunks.data(), whole.size() * sizeof(float)));
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(Engine, CutBackThenDecodeIsLikeFresh) {
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(stories(), backend, small());
    const std::vector<TokenId> ids = story_ids(*e);
    const size_t p = 12;
    // Decode a different continuation past p, cut back to p, then decode the story's own tokens.
    e->cut(0, 0);
    e->feed(0, std::span<const TokenId>(ids.data(), p));
    const std::vector<TokenId> detour = {300, 301, 302, 303, 304, 305};
    for (TokenId id : detour) e->feed(0, std::span<const TokenId>(&id, 1));
    EXPECT_EQ(e->position(0), p + detour.size());
    e->cut(0, static_cast<uint32_t>(p));
    EXPECT_EQ(e->position(0), p);
    std::vector<float> after_cut;
    for (size_t i = p; i < ids.size(); ++i) after_cut = copy(e->feed(0, std::span<const TokenId>(&ids[i], 1)));

    auto fresh = strata::test::open_engine(stories(), backend, small());
    fresh->feed(0, std::span<const TokenId>(ids.data(), p));
    std::vector<float> want;
    for (size_t i = p; i < ids.size(); ++i) want = copy(fresh->feed(0, std::span<const TokenId>(&ids[i], 1)));
    EXPECT_EQ(0, std::memcmp(want.data(), after_cut.data(), want.size() * sizeof(float)));
    // A window that does not continue the slot, or a cut past its end, is refused.
    EXPECT_THROW(e->cut(0, e->position(0) + 1), strata::Error);
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(Engine, SlotsAreIndependent) {
  strata::EngineSettings s = small();
  s.slots = 2;
  auto e = strata::test::open_engine(stories(), "reference", s);
  const std::vector<TokenId> ids = story_ids(*e);
  e->cut(0, 0);
  const std::vector<float> alone = copy(e->feed(0, ids));
  e->cut(0, 0);
  e->feed(1, std::span<const TokenId>(ids.data(), 9));  // another sequence in slot 1, interleaved
  e->feed(0, std::span<const TokenId>(ids.data(), 20));
  e->feed(1, std::span<const TokenId>(ids.data() + 30, 5));
  const std::vector<float> interleaved = copy(e->feed(0, std::span<const TokenId>(ids.data() + 20, ids.size() - 20)));
  EXPECT_EQ(0, std::memcmp(alone.data(), interleaved.data(), alone.size() * sizeof(float)));
  EXPECT_EQ(e->position(1), 14u);
}

TEST(Engine, Q8_0KvCacheStaysClose) {
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto f16 = strata::test::open_engine(stories(), backend, small());
    auto q8 = strata::test::open_engine(stories(), backend, small(512, strata::format::GgmlType::Q8_0));
    const std::vector<TokenId> ids = story_ids(*f16);
    f16->cut(0, 0);
    // Teacher-forced along the story: the logits of every step stay within a few percent.
    double worst = 0, total = 0;
    size_t same_argmax = 0;
    for (TokenId id : ids) {
      const std::vector<float> a = copy(f16->feed(0, std::span<const TokenId>(&id, 1)));
      const std::vector<float> b = copy(q8->feed(0, std::span<const TokenId>(&id, 1)));
      const double d = relative_l2(b, a);
      worst = std::max(worst, d);
      total += d;
      same_argmax += strata::sampling::argmax(a) == strata::sampling::argmax(b);
      for (float v : b) ASSERT_TRUE(std::isfinite(v));
    }
    // Heads of 8 values share one Q8_0 scale per 32: about 1% per key, more on the tiny model's sharp logits.
    const double mean = total / static_cast<double>(ids.size());
    EXPECT_LT(worst, 0.15);
    EXPECT_LT(mean, 0.05);
    EXPECT_GE(same_argmax, ids.size() - 2);
    std::printf("[%s] q8_0 KV vs f16: relative L2 of logits: mean %.4f, worst %.4f; argmax agrees %zu/%zu\n",
                backend.c_str(), mean, worst, same_argmax, ids.size());
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

// A generated qwen3moe (mkmodel's "tiny" shape, q4_k_m recipe): q/k norms, neox RoPE, quantized experts.
TEST(Engine, GeneratedQwen3MoeRuns) {
  strata::mkmodel::ModelSpec spec = *strata::mkmodel::shape_preset("tiny", strata::Arch::Qwen3Moe);
  spec.n_layer = 2;
  spec.quant = strata::mkmodel::QuantPreset::Q4_K_M;
  const fs::path path = scratch("qwen3moe-tiny.gguf");
  strata::mkmodel::write_model(spec, path.string(), {});
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(path.string(), backend, small());
    ASSERT_EQ(e->model().weights().layers[0].attn_spec.rope_mode, 2);
    ASSERT_NE(e->model().weights().layers[0].attn.q_norm, nullptr);
    const std::vector<TokenId> ids = {1, 17, 400, 2048, 5, 77, 3000, 9};
    const std::vector<float> whole = copy(e->feed(0, ids));
    for (float v : whole) ASSERT_TRUE(std::isfinite(v));
    e->cut(0, 0);
    std::vector<float> single;
    for (TokenId id : ids) single = copy(e->feed(0, std::span<const TokenId>(&id, 1)));
    if (backend == "reference") {
      EXPECT_EQ(0, std::memcmp(whole.data(), single.data(), whole.size() * sizeof(float)));
    } else {
      EXPECT_LT(relative_l2(single, whole), 1e-3);
    }
    // Different tokens give different logits (the layers are not a constant function).
    e->cut(0, 0);
    const std::vector<TokenId> other = {1, 18, 401, 2049, 6, 78, 3001, 10};
    EXPECT_GT(relative_l2(copy(e->feed(0, other)), whole), 1e-3);
    ++ran;
  }
  EXPECT_GT(ran, 0);
  fs::remove(path);
}

// The host step of a MoE layer: the router's choices become the MOE op, experts ascending, every (token, expert,
// weight) choice once, each expert's matrices the right slice of the stacked tensors.
TEST(Engine, MoeOpGroupsTheRoutersChoices) {
  strata::mkmodel::ModelSpec spec = *strata::mkmodel::shape_preset("tiny", strata::Arch::Qwen3Moe);
  spec.n_layer = 1;
  spec.quant = strata::mkmodel::QuantPreset::Q8_0;
  const fs::path path = scratch("qwen3moe-routing.gguf");
  strata::mkmodel::write_model(spec, path.string(), {});
  const auto model = strata::Model::load(path.string());
  const strata::HParams& hp = model->hparams();
  strata::KvCache kv(hp.n_layer, model->kv_dim(), 64, 1, strata::format::GgmlType::F16);
  strata::Activations act = model->make_activations(16, 1);
  std::vector<TokenId> ids;
  for (TokenId i = 0; i < 16; ++i) ids.push_back(1 + 211 * i);
  const std::vector<strata::Stage> stages = model->build_window({ids, 0, 0, false}, act, kv);
  int host_steps = 0;
  for (const strata::Stage& st : stages) {
    strata::run_reference(st.ops.data(), st.ops.size());
    if (!st.host) continue;
    st.host();
    ++host_steps;
    const strata_moe_op& m = act.moe;
    const strata::ExpertStack& ex = model->weights().layers[0].experts;
    ASSERT_EQ(m.n_tok, ids.size());
    ASSERT_EQ(m.token_offsets[m.n_experts], hp.n_expert_used * ids.size());
    std::vector<int> seen(ids.size() * hp.n_expert, 0);
    for (uint32_t i = 0; i < m.n_experts; ++i) {
      if (i > 0) {
        EXPECT_LT(m.expert_ids[i - 1], m.expert_ids[i]);
      }
      const uint32_t e = m.expert_ids[i];
      const uint64_t gate_stride = strata::format::row_bytes(ex.gate->type, ex.gate->ne[0]) * ex.gate->ne[1];
      const uint64_t down_stride = strata::format::row_bytes(ex.down->type, ex.down->ne[0]) * ex.down->ne[1];
      EXPECT_EQ(m.weights[i].gate, ex.gate->data + e * gate_stride);
      EXPECT_EQ(m.weights[i].down, ex.down->data + e * down_stride);
      for (uint32_t pair = m.token_offsets[i]; pair < m.token_offsets[i + 1]; ++pair) {
        const uint32_t t = m.token_index[pair];
        if (pair > m.token_offsets[i]) {
          EXPECT_LT(m.token_index[pair - 1], t) << "tokens in window order";
        }
        // The router chose e for t with exactly this weight.
        bool chosen = false;
        for (uint32_t j = 0; j < hp.n_expert_used; ++j) {
          chosen |= act.expert_ids[t * hp.n_expert_used + j] == static_cast<int32_t>(e) &&
                    act.expert_weights[t * hp.n_expert_used + j] == m.route_weight[pair];
        }
        EXPECT_TRUE(chosen) << "expert " << e << " token " << t;
        ++seen[t * hp.n_expert + e];
      }
    }
    for (int count : seen) EXPECT_LE(count, 1);
    // Renormalised top-k weights sum to 1 per token.
    for (size_t t = 0; t < ids.size(); ++t) {
      float sum = 0;
      for (uint32_t j = 0; j < hp.n_expert_used; ++j) sum += act.expert_weights[t * hp.n_expert_used + j];
      EXPECT_NEAR(sum, 1.0f, 1e-6f);
    }
  }
  EXPECT_EQ(host_steps, 1);
  fs::remove(path);
}

TEST(Engine, RefusesModelsItCannotRun) {
  // stories260K's keys under gpt-oss's names, plus its expert keys, and none of gpt-oss's tensors: the arch check
  // names the architecture and what is missing (every architecture Strata recognises has its graph now).
  const strata::gguf::Model src = strata::gguf::Model::open(stories());
  const auto write = [](const strata::gguf::Writer& w, const std::vector<std::span<const uint8_t>>& data,
                        const fs::path& path) {
    const std::vector<uint8_t> bytes = w.to_bytes(data);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  const fs::path unbuilt = scratch("gpt-oss.gguf");
  {
    strata::gguf::Writer w;
    for (const auto& kv : src.metadata().entries()) {
      std::string key(kv.key);
      if (key.rfind("llama.", 0) == 0) key = "gpt-oss." + key.substr(6);
      w.set_value(key, kv.value);
    }
    w.set_string("general.architecture", "gpt-oss");
    w.set_u32("gpt-oss.expert_count", 4);
    w.set_u32("gpt-oss.expert_used_count", 2);
    w.set_u32("gpt-oss.expert_feed_forward_length", 64);
    w.set_u32("gpt-oss.attention.sliding_window", 16);
    write(w, {}, unbuilt);
  }
  try {
    strata::Model::load(unbuilt.string());
    ADD_FAILURE() << "gpt-oss loaded";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt-oss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attn_sinks"), std::string::npos) << e.what();
  }
  // stories260K without one of its tensors: the arch check names it.
  strata::gguf::Writer w;
  for (const auto& kv : src.metadata().entries()) w.set_value(kv.key, kv.value);
  std::vector<std::span<const uint8_t>> data;
  for (const auto& t : src.tensors()) {
    if (t.name == "blk.2.attn_k.weight") continue;
    w.add_tensor(t.name, t.type, t.shape());
    data.push_back(t.bytes());
  }
  const fs::path broken = scratch("stories-broken.gguf");
  write(w, data, broken);
  try {
    strata::Model::load(broken.string());
    ADD_FAILURE() << "a model without blk.2.attn_k.weight loaded";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.2.attn_k.weight"), std::string::npos) << e.what();
  }
  fs::remove(unbuilt);
  fs::remove(broken);
}

TEST(Engine, ResidentMemoryIsTheFilePlusTheKvCache) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine are part of RSS; measured in plain builds";
#endif
  // A ~50 MB dense llama (q8_0): every weight page is read by one forward pass.
  strata::mkmodel::ModelSpec spec = *strata::mkmodel::shape_preset("tiny", strata::Arch::Llama);
  spec.n_expert = 0;
  spec.n_expert_used = 0;
  spec.n_layer = 6;
  spec.n_embd = 768;
  spec.n_head = 12;
  spec.n_head_kv = 4;
  spec.head_dim = 64;
  spec.n_ff = 2048;
  spec.quant = strata::mkmodel::QuantPreset::Q8_0;
  const fs::path path = scratch("llama-rss.gguf");
  strata::mkmodel::write_model(spec, path.string(), {});
  const uint64_t before = strata::resident_bytes();
  uint64_t file = 0, kv = 0, after = 0;
  {
    auto e = strata::test::open_engine(path.string(), "reference", small(16));
    file = e->model().file_bytes();
    kv = e->kv().bytes();
    const std::vector<TokenId> ids = {1, 100, 200, 300};
    e->feed(0, ids);
    e->feed(0, std::span<const TokenId>(ids.data() + 1, 1));
    after = strata::resident_bytes();
  }
  const double budget = 1.05 * static_cast<double>(file + kv);
  std::printf("resident memory: +%s for a %s file and a %s KV cache (budget %s)\n",
              strata::format_mib(after - before).c_str(), strata::format_mib(file).c_str(),
              strata::format_mib(kv).c_str(), strata::format_mib(static_cast<uint64_t>(budget)).c_str());
  EXPECT_GT(after - before, file / 2) << "the weights were not read";
  EXPECT_LE(static_cast<double>(after - before), budget);
  fs::remove(path);
}

}  // namespace
