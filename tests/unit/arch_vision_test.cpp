// Qwen3-VL MoE's text model (qwen3vlmoe) against llama.cpp on ../shared/data/vision (relative to the source tree;
// its README gives the keys, the interleaved M-RoPE and the tolerances): the text-only control, 8 prompt ids and 16
// greedy steps. A text token's position components are (p, p, p, 0), so M-RoPE differs from qwen3moe's NeoX RoPE
// only in the pairs that take the fourth component (here pair 31, never rotated): the README puts the exact-F32
// engines' agreement at ~1e-6. The reference backend with an F32 cache (as llama.cpp ran) must match every id with
// top-5 logits within 1e-4; every backend under test with the F16 cache must match the ids, or diverge only at a
// step whose reference margin is below twice the error measured there. Skipped where the folder is missing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/config.hpp"
#include "strata/generate.hpp"
#include "strata/vision.hpp"

namespace {

using strata::TokenId;

std::string vision_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision"; }
std::string text_model() { return vision_dir() + "/qwen3vlmoe-tiny-s1.gguf"; }

bool have_data() {
  return std::filesystem::exists(text_model()) && std::filesystem::exists(vision_dir() + "/vl-tiny-s1.json");
}

nlohmann::json reference_json() {
  std::ifstream in(vision_dir() + "/vl-tiny-s1.json");
  return nlohmann::json::parse(in);
}

strata::EngineSettings vision_settings() {
  strata::EngineSettings s;
  s.context = 256;
  s.batch = 256;
  s.threads = 2;
  return s;
}

// Greedy from the control's prompt; returns how many ids matched before the end or a near-tie, and the largest
// top-5 error seen.
struct Greedy {
  int matched = 0;
  int near_tie = -1;
  double max_error = 0.0;
};

// Greedy decoding from `logits` (the prompt's last) against a JSON greedy record (generated, steps, top1_margin):
// each id equal to llama.cpp's, or a divergence at a step whose margin is below twice our top-5 error there.
Greedy follow_greedy(strata::Engine& e, std::span<const float> logits, const nlohmann::json& t, const std::string& what) {
  Greedy g;
  const std::vector<TokenId> want = t.at("generated").get<std::vector<TokenId>>();
  for (size_t s = 0; s < want.size(); ++s) {
    const nlohmann::json& step = t.at("steps").at(s);
    double err = 0.0;
    for (size_t i = 0; i < 5; ++i) {
      const double d = static_cast<double>(logits[step.at("top5_ids")[i].get<size_t>()]) -
                       step.at("top5_logits")[i].get<double>();
      err = std::max(err, std::abs(d));
    }
    g.max_error = std::max(g.max_error, err);
    const auto got = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (got != want[s]) {
      const double margin = t.at("top1_margin").at(s).get<double>();
      EXPECT_LT(margin, 2.0 * err) << what << ": step " << s << " picks " << got << ", llama.cpp " << want[s]
                                   << " (margin " << margin << ", our error there " << err << ")";
      g.near_tie = static_cast<int>(s);
      break;
    }
    ++g.matched;
    if (s + 1 < want.size()) logits = e.feed(0, std::span<const TokenId>(&want[s], 1));
  }
  std::cout << what << ": greedy " << g.matched << "/" << want.size() << " ids equal"
            << (g.near_tie >= 0 ? " (a near-tie at step " + std::to_string(g.near_tie) + ")" : std::string())
            << ", top-5 error <= " << g.max_error << "\n";
  return g;
}

Greedy run_text_only(strata::Engine& e, const nlohmann::json& t, const std::string& what) {
  const std::vector<TokenId> prompt = t.at("prompt").get<std::vector<TokenId>>();
  return follow_greedy(e, e.feed(0, prompt), t, what + ", text only");
}

TEST(ArchVision, TextOnlyControlAgreesWithLlamaCpp) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here (the shared vision data is in CI's workspace); skipped";
  const nlohmann::json j = reference_json();
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto e = strata::test::open_engine(text_model(), backend, vision_settings());
    EXPECT_EQ(e->model().hparams().n_vocab, j.at("n_vocab").get<size_t>());
    run_text_only(*e, j.at("text_only"), "qwen3vlmoe on " + backend);
  }
}

TEST(ArchVision, TextOnlyExactWithAnF32Cache) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  strata::EngineSettings s = vision_settings();
  s.kv_type = strata::format::GgmlType::F32;
  auto e = strata::test::open_engine(text_model(), "reference", s);
  const Greedy g = run_text_only(*e, reference_json().at("text_only"), "qwen3vlmoe on reference, f32 cache");
  EXPECT_EQ(g.near_tie, -1);
  EXPECT_EQ(g.matched, 16);
  EXPECT_LE(g.max_error, 1e-4);
}

// The image prompt with llama.cpp's own image embeddings (image_embeddings.full): prefix, <|vision_start|>, the 12
// image rows (M-RoPE positions (5, 5 + row, 5 + column, 0), deepstack parts added after blocks 0 and 1),
// <|vision_end|> at t = 9, suffix at 10..13; then the logits at position 13 and 16 greedy ids against llama.cpp's.
// This checks the text model's image path apart from the projector (tests/unit/vision_*).
struct ImagePromptResult {
  double max_logit_error = 0.0;
  Greedy greedy;
};

ImagePromptResult run_image_prompt(strata::Engine& e, const nlohmann::json& j, const std::string& what) {
  ImagePromptResult r;
  const nlohmann::json& p = j.at("prompt");
  const nlohmann::json& emb = j.at("image_embeddings");
  std::vector<float> rows;
  for (const auto& row : emb.at("full")) {
    for (const auto& v : row) rows.push_back(v.get<float>());
  }
  const std::vector<TokenId> prefix = p.at("prefix_ids").get<std::vector<TokenId>>();
  const std::vector<TokenId> suffix = p.at("suffix_ids").get<std::vector<TokenId>>();
  const TokenId start = p.at("chunks")[0].at("tokens")[0].get<TokenId>();
  const TokenId end = p.at("chunks")[2].at("tokens")[0].get<TokenId>();
  e.feed(0, prefix);
  e.feed(0, std::span<const TokenId>(&start, 1));
  strata::Engine::ImageTokens image;
  image.rows = rows;
  image.nx = p.at("chunks")[1].at("n_tokens_x").get<uint32_t>();
  image.ny = p.at("chunks")[1].at("n_tokens_y").get<uint32_t>();
  image.advance = p.at("chunks")[1].at("n_pos").get<uint32_t>();
  e.feed_image(0, image);
  e.feed(0, std::span<const TokenId>(&end, 1));
  const std::span<const float> logits = e.feed(0, suffix);
  const std::vector<float> want = j.at("after_prompt").at("full_logits").get<std::vector<float>>();
  for (size_t v = 0; v < want.size() && v < logits.size(); ++v) {
    r.max_logit_error =
        std::max(r.max_logit_error, std::abs(static_cast<double>(logits[v]) - static_cast<double>(want[v])));
  }
  std::cout << what << ": image prompt logits within " << r.max_logit_error << " of llama.cpp's\n";
  r.greedy = follow_greedy(e, logits, j.at("greedy"), what + ", after the image prompt");
  return r;
}

TEST(ArchVision, ImagePromptWithLlamaCppsEmbeddings) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const nlohmann::json j = reference_json();
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto e = strata::test::open_engine(text_model(), backend, vision_settings());
    const ImagePromptResult r = run_image_prompt(*e, j, "qwen3vlmoe on " + backend);
    EXPECT_LE(r.max_logit_error, 2e-2);  // the F16 cache's error (the text tests see 1e-3 on top-5 logits)
  }
  strata::EngineSettings s = vision_settings();
  s.kv_type = strata::format::GgmlType::F32;
  auto e = strata::test::open_engine(text_model(), "reference", s);
  const ImagePromptResult r = run_image_prompt(*e, j, "qwen3vlmoe on reference, f32 cache");
  EXPECT_LE(r.max_logit_error, 1e-4);
  EXPECT_EQ(r.greedy.matched, 16);
}

// The reference prompt's ids with an image of n_tokens placeholders after <|vision_start|>; `at` gets where they start.
std::vector<TokenId> image_prompt_ids(const nlohmann::json& j, size_t n_tokens, size_t& at) {
  const nlohmann::json& p = j.at("prompt");
  std::vector<TokenId> ids = p.at("prefix_ids").get<std::vector<TokenId>>();
  ids.push_back(p.at("chunks")[0].at("tokens")[0].get<TokenId>());
  at = ids.size();
  ids.insert(ids.end(), n_tokens, ids.back());
  ids.push_back(p.at("chunks")[2].at("tokens")[0].get<TokenId>());
  for (TokenId t : p.at("suffix_ids").get<std::vector<TokenId>>()) ids.push_back(t);
  return ids;
}

strata::CompletionOptions greedy_with(const strata::PromptImage& image) {
  strata::CompletionOptions o;
  o.max_tokens = 16;
  o.sampling.temperature = 0.0f;
  o.images.push_back(image);
  return o;
}

// The same prompt through complete() (the path of `strata run --image` and the server): the image's 12 tokens as
// placeholders at prompt[5, 17), fed as rows; greedy decoding gives llama.cpp's 16 ids.
TEST(ArchVision, CompleteFeedsAPromptImage) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const nlohmann::json j = reference_json();
  std::vector<float> rows;
  for (const auto& row : j.at("image_embeddings").at("full")) {
    for (const auto& v : row) rows.push_back(v.get<float>());
  }
  strata::PromptImage image;
  const std::vector<TokenId> ids = image_prompt_ids(j, 12, image.at);
  image.tokens = strata::Engine::ImageTokens{rows, 4, 3, 4};
  const strata::CompletionOptions o = greedy_with(image);
  strata::EngineSettings s = vision_settings();
  s.kv_type = strata::format::GgmlType::F32;
  auto e = strata::test::open_engine(text_model(), "reference", s);
  const strata::CompletionResult r = strata::complete(*e, 0, ids, 0, o, [](const strata::GeneratedToken&) { return true; });
  EXPECT_EQ(r.generated_ids, j.at("greedy").at("generated").get<std::vector<TokenId>>());
  // A second completion on the same slot whose reuse ends inside the image (a caller's keyed prompts part there)
  // is cut back to the image's start: the image is fed again whole.
  const strata::CompletionResult inside =
      strata::complete(*e, 0, ids, image.at + 5, o, [](const strata::GeneratedToken&) { return true; });
  EXPECT_EQ(inside.reused_tokens, image.at);
  EXPECT_EQ(inside.generated_ids, r.generated_ids);
  // One that holds the whole image (the same image's bytes: the keyed prompts agree) feeds only the last token,
  // and the M-RoPE positions after the image stay those of the first run.
  const strata::CompletionResult held =
      strata::complete(*e, 0, ids, ids.size(), o, [](const strata::GeneratedToken&) { return true; });
  EXPECT_EQ(held.reused_tokens, ids.size() - 1);
  EXPECT_EQ(held.generated_ids, r.generated_ids);
}

// End to end: the PNG through Strata's projector (core/src/vision), its rows through the text model: llama.cpp's
// greedy ids (the README: an exact-F32 engine lands ~1e-3 from llama.cpp's logits; the smallest greedy margin is
// 0.066).
TEST(ArchVision, PngThroughTheProjectorGivesLlamaCppsIds) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const nlohmann::json j = reference_json();
  const strata::vision::Projector projector = strata::vision::Projector::load(vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf");
  const strata::vision::Embeddings emb = projector.encode(strata::vision::load_image(vision_dir() + "/image-64x48.png"));
  strata::PromptImage image;
  const std::vector<TokenId> ids = image_prompt_ids(j, emb.n_tokens(), image.at);
  image.tokens = strata::Engine::ImageTokens{emb.rows, emb.nx, emb.ny, emb.n_pos};
  const strata::CompletionOptions o = greedy_with(image);
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto e = strata::test::open_engine(text_model(), backend, vision_settings());
    const strata::CompletionResult r =
        strata::complete(*e, 0, ids, 0, o, [](const strata::GeneratedToken&) { return true; });
    EXPECT_EQ(r.generated_ids, j.at("greedy").at("generated").get<std::vector<TokenId>>()) << backend;
  }
}

// The keys llama.cpp requires: the four M-RoPE sections and the deepstack count.
TEST(ArchVision, ReadsTheMropeSectionsAndDeepstack) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const auto m = strata::Model::load(text_model());
  const strata::HParams& hp = m->hparams();
  EXPECT_EQ(hp.arch, strata::Arch::Qwen3VlMoe);
  EXPECT_EQ(hp.rope_sections, (std::array<uint32_t, 4>{12, 10, 10, 0}));
  EXPECT_EQ(hp.n_deepstack, 2u);
}

// The path of a GPU engine's images (prompt_images.cpp sets f16_attention where the backend has device memory):
// the PNG through the projector's backend ops with the keys and values in an f16 cache, then the text model, on
// every backend under test: still llama.cpp's 16 greedy ids (its own FA-on shift keeps them too; the smallest
// greedy margin is 0.066).
TEST(ArchVision, F16AttentionEncoderGivesLlamaCppsIds) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const nlohmann::json j = reference_json();
  const strata::vision::Projector projector = strata::vision::Projector::load(vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf");
  const strata::vision::ProjectorInput input = projector.preprocess(strata::vision::load_image(vision_dir() + "/image-64x48.png"));
  strata::vision::EncodeOptions o;
  o.f16_attention = true;
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto e = strata::test::open_engine(text_model(), backend, vision_settings());
    const std::optional<strata::vision::Embeddings> emb = projector.encode_on(e->backend(), input, o);
    ASSERT_TRUE(emb.has_value()) << backend;
    strata::PromptImage image;
    const std::vector<TokenId> ids = image_prompt_ids(j, emb->n_tokens(), image.at);
    image.tokens = strata::Engine::ImageTokens{emb->rows, emb->nx, emb->ny, emb->n_pos};
    const strata::CompletionResult r =
        strata::complete(*e, 0, ids, 0, greedy_with(image), [](const strata::GeneratedToken&) { return true; });
    EXPECT_EQ(r.generated_ids, j.at("greedy").at("generated").get<std::vector<TokenId>>()) << backend;
  }
}

// Item 1's hybrid path: the same image prompt through an engine whose experts sit in a 25% cache on a stand-in GPU
// (cpu_avx2 ops on device-like memory), misses split between its PCIe reads and the CPU pool: the cpu_avx2
// engine's logits to the byte after the prompt (placement never changes a token) and llama.cpp's 16 greedy ids.
TEST(ArchVision, ImagePromptOnTheHybridPath) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  const nlohmann::json j = reference_json();
  auto plain = strata::test::open_engine(text_model(), "cpu_avx2", vision_settings());
  const ImagePromptResult want = run_image_prompt(*plain, j, "qwen3vlmoe on cpu_avx2");
  strata::EngineSettings s = vision_settings();
  s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
  s.experts.cache.percent = 25;
  s.experts.pcie_frac = 0.5;
  s.graphs = true;
  auto hybrid = std::make_unique<strata::Engine>(
      strata::Model::load(text_model()),
      std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
      strata::test::built_plugins().instantiate("cpu_avx2"));
  ASSERT_TRUE(hybrid->hybrid());
  const ImagePromptResult got = run_image_prompt(*hybrid, j, "qwen3vlmoe hybrid at 25%");
  EXPECT_EQ(got.max_logit_error, want.max_logit_error);  // the same logits, so the same distance to llama.cpp's
  EXPECT_EQ(got.greedy.matched, want.greedy.matched);
  EXPECT_EQ(got.greedy.matched, 16);
}

}  // namespace
