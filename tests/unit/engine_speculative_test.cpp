// Verify windows and speculative decoding (issue 30): a window's logits are one-token steps' bit for bit on every
// backend under test (the reference, cpu_avx2, and on a GPU machine the GPU plugins), speculation never changes a
// greedy id (ngram drafts, and stories260K drafting for its upcycled MoE), sampling with drafts reproduces under a
// seed and keeps the model's distribution, and the launch refuses what it cannot do by name.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "engine_backends.hpp"
#include "strata/config.hpp"
#include "strata/error.hpp"
#include "strata/generate.hpp"
#include "strata/sampling.hpp"
#include "strata/serve/request.hpp"
#include "strata/speculative.hpp"

namespace {

using strata::CompletionOptions;
using strata::CompletionResult;
using strata::Engine;
using strata::TokenId;

std::string moe() { return strata::test::models_dir() + "/stories260K-moe.gguf"; }
std::string dense() { return strata::test::models_dir() + "/stories260K.gguf"; }

// A story that repeats itself: what prompt lookup is for.
const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw "
    "a big red ball. Once upon a time, there was a little girl named Lily. She loved to play outside";

std::vector<TokenId> encode(const Engine& e, const std::string& text) {
  return e.model().tokenizer().encode(text, {.add_bos = true, .add_eos = false, .parse_special = false});
}

strata::EngineSettings window_settings() {
  strata::EngineSettings s = strata::test::test_settings();
  s.max_window_logits = 16;
  return s;
}

// Feeds the prompt, then `n` greedy tokens one at a time; returns the tokens and the logits after each.
void one_token_steps(Engine& e, const std::vector<TokenId>& prompt, size_t n, std::vector<TokenId>& tokens,
                     std::vector<std::vector<float>>& logits) {
  std::span<const float> l = e.feed(0, prompt);
  for (size_t i = 0; i < n; ++i) {
    const TokenId t = strata::sampling::argmax(l);
    tokens.push_back(t);
    l = e.feed(0, std::span<const TokenId>(&t, 1));
    logits.emplace_back(l.begin(), l.end());
  }
}

TEST(EngineSpeculative, WindowLogitsEqualOneTokenStepsBitForBitOnEveryBackend) {
  int ran = 0;
  for (const std::string& model : {moe(), dense()}) {
    for (const std::string& backend : strata::test::backends_under_test()) {
      SCOPED_TRACE(backend + ", " + model);
      auto one = strata::test::open_engine(model, backend, window_settings());
      auto win = strata::test::open_engine(model, backend, window_settings());
      const std::vector<TokenId> prompt = encode(*one, kStory);
      // Windows of 2, 3, ..., 9 tokens, twice over: 88 positions after the prompt.
      std::vector<uint32_t> sizes;
      for (int round = 0; round < 2; ++round)
        for (uint32_t k = 2; k <= 9; ++k) sizes.push_back(k);
      size_t total = 0;
      for (uint32_t k : sizes) total += k;
      std::vector<TokenId> tokens;
      std::vector<std::vector<float>> ref;
      one_token_steps(*one, prompt, total, tokens, ref);
      win->feed(0, prompt);
      const size_t n_vocab = win->model().hparams().n_vocab;
      size_t at = 0;
      for (uint32_t k : sizes) {
        const std::span<const float> l = win->feed_window(0, std::span<const TokenId>(tokens.data() + at, k));
        ASSERT_EQ(l.size(), k * n_vocab);
        for (uint32_t r = 0; r < k; ++r) {
          ASSERT_EQ(std::memcmp(l.data() + r * n_vocab, ref[at + r].data(), n_vocab * sizeof(float)), 0)
              << "window of " << k << " tokens at position " << prompt.size() + at << ": row " << r
              << " differs from the one-token step";
        }
        at += k;
      }
      // A window whose tail is cut (a rejection) and fed again gives the same logits as well.
      win->cut(0, static_cast<uint32_t>(prompt.size() + 3));
      const std::span<const float> again = win->feed_window(0, std::span<const TokenId>(tokens.data() + 3, 5));
      for (uint32_t r = 0; r < 5; ++r) {
        ASSERT_EQ(std::memcmp(again.data() + r * n_vocab, ref[3 + r].data(), n_vocab * sizeof(float)), 0)
            << "after a cut: row " << r;
      }
      ++ran;
    }
  }
  EXPECT_GT(ran, 0);
}

CompletionResult run(Engine& e, const std::vector<TokenId>& prompt, int n, strata::Draft* draft, uint32_t n_max,
                     float temperature = 0.0f, uint64_t seed = 1) {
  CompletionOptions o;
  o.max_tokens = n;
  o.sampling.temperature = temperature;
  o.sampling.seed = seed;
  o.draft = draft;
  o.draft_n_max = n_max;
  e.cut(0, 0);
  if (draft) draft->reset();
  return strata::complete(e, 0, prompt, 0, o);
}

TEST(EngineSpeculative, GreedyIdsAreTheSameWithNgramAndModelDraftsOnEveryBackend) {
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(moe(), backend, window_settings());
    const std::vector<TokenId> prompt = encode(*e, kStory);
    const CompletionResult plain = run(*e, prompt, 120, nullptr, 0);
    ASSERT_EQ(plain.generated_ids.size(), 120u);
    const uint32_t plain_end = e->position(0);
    for (uint32_t n_max : {1u, 3u, 8u, 15u}) {
      SCOPED_TRACE("ngram, n_max " + std::to_string(n_max));
      strata::NgramDraft ngram;
      const CompletionResult spec = run(*e, prompt, 120, &ngram, n_max);
      EXPECT_EQ(spec.generated_ids, plain.generated_ids);
      EXPECT_EQ(spec.text, plain.text);
      EXPECT_EQ(spec.decode_tokens, plain.decode_tokens);
      EXPECT_EQ(e->position(0), plain_end) << "the slot holds what one-token feeds leave";
      EXPECT_GT(spec.draft.drafted, 0u);
      EXPECT_GT(spec.draft.accepted, 0u);
      EXPECT_LE(spec.draft.accepted, spec.draft.drafted);
    }
    {
      SCOPED_TRACE("model draft stories260K");
      strata::ModelDraft draft(strata::test::open_engine(dense(), "reference"), nullptr, 8);
      const CompletionResult spec = run(*e, prompt, 120, &draft, 8);
      EXPECT_EQ(spec.generated_ids, plain.generated_ids);
      EXPECT_EQ(e->position(0), plain_end);
      ASSERT_GT(spec.draft.drafted, 0u);
      // Its greedy continuation is the MoE's (every expert a copy of the dense FFN): nearly all accepted.
      EXPECT_GE(static_cast<double>(spec.draft.accepted), 0.8 * static_cast<double>(spec.draft.drafted));
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(EngineSpeculative, StopsWhereOneTokenStepsStop) {
  auto e = strata::test::open_engine(moe(), "reference", window_settings());
  const std::vector<TokenId> prompt = encode(*e, kStory);
  strata::NgramDraft ngram;
  for (int n : {1, 2, 5, 17, 40}) {
    SCOPED_TRACE("max_tokens " + std::to_string(n));
    const CompletionResult plain = run(*e, prompt, n, nullptr, 0);
    const uint32_t end = e->position(0);
    const CompletionResult spec = run(*e, prompt, n, &ngram, 8);
    EXPECT_EQ(spec.generated_ids, plain.generated_ids);
    EXPECT_EQ(spec.stop, plain.stop);
    EXPECT_EQ(e->position(0), end);
  }
  // The context's end: a 512-position slot filled to the brim stops at the same token.
  const CompletionResult plain = run(*e, prompt, -1, nullptr, 0);
  const CompletionResult spec = run(*e, prompt, -1, &ngram, 8);
  EXPECT_EQ(spec.generated_ids, plain.generated_ids);
  EXPECT_EQ(spec.stop, plain.stop);
}

TEST(EngineSpeculative, SeededSamplingWithDraftsReproduces) {
  auto e = strata::test::open_engine(moe(), "reference", window_settings());
  const std::vector<TokenId> prompt = encode(*e, kStory);
  strata::NgramDraft ngram;
  const CompletionResult a = run(*e, prompt, 64, &ngram, 8, 0.8f, 42);
  const CompletionResult b = run(*e, prompt, 64, &ngram, 8, 0.8f, 42);
  EXPECT_EQ(a.generated_ids, b.generated_ids);
  EXPECT_GT(a.draft.drafted, 0u);
}

// Sampler::verify draws from the sampler's distribution p whatever the (deterministic) draft proposes.
TEST(EngineSpeculative, VerifyKeepsTheDistribution) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, 1.5f};
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  for (TokenId draft : {1, 2}) {
    strata::SamplingParams params;
    params.temperature = 1.0f;
    params.seed = 9;
    strata::Sampler s(params);
    std::map<TokenId, int> counts;
    const int n = 40000;
    for (int i = 0; i < n; ++i) ++counts[s.verify(logits, {}, draft)];
    for (TokenId t = 0; t < 4; ++t) {
      const double want = std::exp(static_cast<double>(logits[static_cast<size_t>(t)])) / z;
      EXPECT_NEAR(static_cast<double>(counts[t]) / n, want, 0.01) << "token " << t << ", draft " << draft;
    }
  }
  // Greedy: the argmax, draft or not.
  strata::Sampler g(strata::SamplingParams{});
  EXPECT_EQ(g.verify(logits, {}, 3), 1);
  EXPECT_EQ(g.verify(logits, {}, 1), 1);
}

TEST(EngineSpeculative, NgramProposesWhatFollowedTheLongestRecentMatch) {
  strata::NgramDraft d;
  const std::vector<TokenId> a = {1, 2, 3, 7, 2, 3, 9, 2, 3};
  EXPECT_EQ(d.propose(a, 3), (std::vector<TokenId>{9, 2, 3}));  // the most recent [2, 3]
  const std::vector<TokenId> b = {5, 2, 3, 8, 1, 2, 3, 6, 5, 2, 3};
  EXPECT_EQ(d.propose(b, 3), (std::vector<TokenId>{8, 1, 2}));  // [5, 2, 3] beats the more recent [2, 3]
  EXPECT_EQ(d.propose(b, 0), std::vector<TokenId>{});
  const std::vector<TokenId> c = {1, 2, 3, 4};
  EXPECT_EQ(d.propose(c, 4), std::vector<TokenId>{});  // nothing repeats
}

TEST(EngineSpeculative, ModelDraftOfAnotherVocabularyIsRefusedByName) {
  const strata::Tokenizer gpt2 =
      strata::Tokenizer::from_file(std::string(STRATA_TEST_DATA) + "/vocab/ggml-vocab-gpt-2.gguf");
  auto e = strata::test::open_engine(moe(), "reference");
  EXPECT_NE(strata::vocabulary_difference(e->model().tokenizer(), gpt2), "");
  auto d = strata::test::open_engine(dense(), "reference");
  EXPECT_EQ(strata::vocabulary_difference(e->model().tokenizer(), d->model().tokenizer()), "");

  strata::config::Launch launch = strata::config::load("", {}, {"speculative.draft=model",
      "speculative.model=" + std::string(STRATA_TEST_DATA) + "/vocab/ggml-vocab-gpt-2.gguf"});
  try {
    strata::make_draft(launch, *e);
    FAIL() << "a draft of another vocabulary was accepted";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("speculative.model"), std::string::npos) << err.what();
  }
}

TEST(EngineSpeculative, LaunchRefusesSlotsAndAModelDraftWithoutAFile) {
  try {
    strata::config::load("", {}, {"speculative.draft=ngram", "runtime.slots=2"});
    FAIL() << "speculation with two slots was accepted";
  } catch (const strata::Error& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("runtime.slots"), std::string::npos) << m;
    EXPECT_NE(m.find("speculative.draft: off"), std::string::npos) << m;
  }
  try {
    strata::config::load("", {}, {"speculative.draft=model"});
    FAIL() << "a model draft without a file was accepted";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("speculative.model"), std::string::npos) << err.what();
  }
  const strata::config::Launch ok = strata::config::load("", {}, {"speculative.draft=ngram"});
  EXPECT_EQ(ok.speculative.n_max, 8);
  EXPECT_EQ(strata::settings_from(ok).max_window_logits, 16u);
}

// strata serve's request field: false, or {"n_max": N} with N in 1..31; anything else is a 400 naming it.
TEST(EngineSpeculative, ServeRequestFieldIsReadAndCheckedByName) {
  using strata::serve::ApiError;
  using strata::serve::CompletionRequest;
  using strata::serve::Endpoint;
  const auto parse = [](const std::string& field) {
    return strata::serve::parse_completion_request(Endpoint::Completions,
                                                   R"({"prompt": "Hi", "speculative": )" + field + "}", "m");
  };
  const auto n_max = [&](const std::string& field) -> std::optional<int> {
    const auto parsed = parse(field);
    if (!std::holds_alternative<CompletionRequest>(parsed)) {
      ADD_FAILURE() << field << " -> " << std::get<ApiError>(parsed).message;
      return std::nullopt;
    }
    return std::get<CompletionRequest>(parsed).speculative_n_max;
  };
  EXPECT_EQ(n_max("false"), 0);
  EXPECT_EQ(n_max(R"({"n_max": 4})"), 4);
  EXPECT_EQ(n_max("null"), std::nullopt);
  for (const std::string bad : {"true", "3", R"({"n_max": 0})", R"({"n_max": 32})", R"({"n_max": 2.5})", R"({})",
                                R"({"n_max": 4, "n_min": 1})", R"("ngram")"}) {
    const auto parsed = parse(bad);
    ASSERT_TRUE(std::holds_alternative<ApiError>(parsed)) << "accepted: " << bad;
    const ApiError& e = std::get<ApiError>(parsed);
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_EQ(e.param, "speculative") << bad;
  }
}

}  // namespace
