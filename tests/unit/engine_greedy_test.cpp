// End to end on stories260K (a real, trained tiny Llama): greedy ids equal llama2.c run.c's output
// (tests/data/stories260K/expected_greedy.json: BOS at position 0, the prompt with its dummy-prefix space forced,
// then argmax) token for token on every backend, and the decoded text equals what run.c printed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "strata/generate.hpp"

namespace {

using strata::TokenId;

struct GreedyCase {
  std::string prompt;
  int steps;
  std::vector<TokenId> tokens_after_bos;
  std::string text;
};

std::vector<GreedyCase> greedy_cases() {
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/stories260K/expected_greedy.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<GreedyCase> cases;
  for (const auto& c : j.at("cases")) {
    if (c.at("temperature").get<double>() != 0.0) continue;
    cases.push_back({c.at("prompt"), c.at("steps"), c.at("tokens_after_bos").get<std::vector<TokenId>>(),
                     c.at("text")});
  }
  return cases;
}

std::string stories() { return strata::test::models_dir() + "/stories260K.gguf"; }

TEST(EngineGreedy, Stories260KMatchesRunCOnEveryBackend) {
  const std::vector<GreedyCase> cases = greedy_cases();
  ASSERT_FALSE(cases.empty());
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto engine = strata::test::open_engine(stories(), backend);
    for (const GreedyCase& c : cases) {
      SCOPED_TRACE(backend + ", prompt '" + c.prompt + "'");
      strata::GenerateOptions opt;
      const size_t n_prompt = engine->model().tokenizer().encode(c.prompt, {true, false, false}).size() - 1;
      opt.n_predict = c.steps - static_cast<int>(n_prompt);
      const strata::GenerateResult r = strata::generate(*engine, 0, c.prompt, opt);
      ASSERT_EQ(r.prompt_ids.front(), 1) << "BOS at position 0";
      std::vector<TokenId> got(r.prompt_ids.begin() + 1, r.prompt_ids.end());
      got.insert(got.end(), r.generated_ids.begin(), r.generated_ids.end());
      EXPECT_EQ(got, c.tokens_after_bos);
      EXPECT_EQ(r.prompt_text + r.text, c.text);
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no backend ran the greedy cases";
}

// models/stories260K-moe.gguf is stories260K upcycled (`strata mkmodel --upcycle`): every expert a copy of the
// dense FFN, top-2 routing with renormalised weights. Its output must be the dense model's, token for token.
TEST(EngineGreedy, UpcycledMoeEqualsTheDenseModelOnEveryBackend) {
  const std::vector<GreedyCase> cases = greedy_cases();
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    auto dense = strata::test::open_engine(stories(), backend);
    auto moe = strata::test::open_engine(strata::test::models_dir() + "/stories260K-moe.gguf", backend);
    ASSERT_GT(moe->model().hparams().n_expert, 1u);
    ASSERT_TRUE(moe->model().weights().layers.front().has_experts());
    for (const GreedyCase& c : cases) {
      SCOPED_TRACE(backend + ", prompt '" + c.prompt + "'");
      strata::GenerateOptions opt;
      opt.n_predict = 64;
      const strata::GenerateResult want = strata::generate(*dense, 0, c.prompt, opt);
      const strata::GenerateResult got = strata::generate(*moe, 0, c.prompt, opt);
      EXPECT_EQ(got.prompt_ids, want.prompt_ids);
      EXPECT_EQ(got.generated_ids, want.generated_ids);
      EXPECT_EQ(got.text, want.text);
      ++ran;
    }
  }
  EXPECT_GT(ran, 0) << "no backend ran the upcycled model";
}

}  // namespace
