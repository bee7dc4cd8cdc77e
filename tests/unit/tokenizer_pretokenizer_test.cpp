// The pre-tokenizers' splits against tests/data/pretokenizer/splits.json: the models' own split patterns run by
// Python's regex module (scripts/gen_pretokenizer_splits.py), on llama.cpp's test texts and more.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

const nlohmann::json& reference() {
  static const nlohmann::json j = nlohmann::json::parse(
      test::read_file_bytes(std::filesystem::path(STRATA_TEST_DATA) / "pretokenizer" / "splits.json"));
  return j;
}

std::string format_words(const std::vector<std::string>& words) {
  std::string s = "[";
  for (size_t i = 0; i < words.size(); ++i) s += (i ? ", " : "") + test::escape_bytes(words[i]);
  return s + "]";
}

struct Kind {
  const char* name;  // the key in splits.json
  PreTokenizer kind;
};

class PreTokenizerSplits : public ::testing::TestWithParam<Kind> {};

TEST_P(PreTokenizerSplits, MatchReferenceRegexes) {
  const auto& texts = reference().at("texts");
  const auto& splits = reference().at("splits").at(GetParam().name);
  ASSERT_GT(texts.size(), 40u);
  ASSERT_EQ(texts.size(), splits.size());
  size_t passed = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto expected = splits[i].get<std::vector<std::string>>();
    std::vector<std::string> got;
    for (const std::string_view w : pre_tokenize(GetParam().kind, text)) got.emplace_back(w);
    if (got != expected) {
      ADD_FAILURE() << GetParam().name << ": text " << i << " " << test::escape_bytes(text)
                    << "\n  expected: " << format_words(expected) << "\n  got:      " << format_words(got);
      continue;
    }
    ++passed;
  }
  EXPECT_EQ(passed, texts.size());
}

INSTANTIATE_TEST_SUITE_P(
    All, PreTokenizerSplits,
    ::testing::Values(Kind{"Default", PreTokenizer::Default}, Kind{"Gpt2", PreTokenizer::Gpt2},
                      Kind{"Llama3", PreTokenizer::Llama3}, Kind{"Qwen2", PreTokenizer::Qwen2},
                      Kind{"Qwen35", PreTokenizer::Qwen35}, Kind{"DeepseekLlm", PreTokenizer::DeepseekLlm},
                      Kind{"DeepseekCoder", PreTokenizer::DeepseekCoder},
                      Kind{"DeepseekV3", PreTokenizer::DeepseekV3}, Kind{"Starcoder", PreTokenizer::Starcoder},
                      Kind{"Falcon", PreTokenizer::Falcon}, Kind{"Gpt4o", PreTokenizer::Gpt4o},
                      Kind{"Tekken", PreTokenizer::Tekken}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PreTokenizerNames, EveryKnownNameMapsToItsRules) {
  EXPECT_EQ(pre_tokenizer_from_name("gpt-2"), PreTokenizer::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe"), PreTokenizer::Llama3);
  EXPECT_EQ(pre_tokenizer_from_name("qwen2"), PreTokenizer::Qwen2);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-llm"), PreTokenizer::DeepseekLlm);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-coder"), PreTokenizer::DeepseekCoder);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-v3"), PreTokenizer::DeepseekV3);
  EXPECT_EQ(pre_tokenizer_from_name("starcoder"), PreTokenizer::Starcoder);
  EXPECT_EQ(pre_tokenizer_from_name("mpt"), PreTokenizer::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("olmo"), PreTokenizer::Gpt2);
  EXPECT_EQ(pre_tokenizer_from_name("gpt-4o"), PreTokenizer::Gpt4o);
  EXPECT_EQ(pre_tokenizer_from_name("falcon"), PreTokenizer::Falcon);
  EXPECT_EQ(pre_tokenizer_from_name(""), PreTokenizer::Default);
  EXPECT_EQ(pre_tokenizer_from_name("default"), PreTokenizer::Default);
  EXPECT_EQ(pre_tokenizer_from_name("no-such-pre"), std::nullopt);
  for (const std::string& n : pre_tokenizer_names()) EXPECT_TRUE(pre_tokenizer_from_name(n).has_value()) << n;
}

// Pathological inputs stay linear: long runs of one class, and white space before a non-space (200,000
// characters each: linear takes well under a second, quadratic tens of seconds).
TEST(PreTokenizerSpeed, LongRunsStayLinear) {
  const std::string spaces = std::string(200000, ' ') + "x";
  const std::string upper(200000, 'A');
  const std::string digits(200000, '7');
  for (const PreTokenizer k : {PreTokenizer::Gpt2, PreTokenizer::Llama3, PreTokenizer::DeepseekLlm,
                               PreTokenizer::DeepseekV3, PreTokenizer::Gpt4o, PreTokenizer::Default}) {
    const auto t0 = std::chrono::steady_clock::now();
    size_t covered = 0;
    for (const std::string* s : {&spaces, &upper, &digits}) {
      for (const auto w : pre_tokenize(k, *s)) covered += w.size();
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(covered, spaces.size() + upper.size() + digits.size());
    EXPECT_LT(ms, 10000.0) << "pre-tokenizer " << static_cast<int>(k);
  }
}

}  // namespace
}  // namespace strata
