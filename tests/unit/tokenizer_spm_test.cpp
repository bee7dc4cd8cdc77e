// SentencePiece BPE on stories260K (a real Llama vocabulary of 512 tokens: 0 <unk>, 1 <s>, 2 </s>, 3..258 the
// byte tokens <0x00>..<0xFF>, merges after): llama2.c's reference prompts and output text, byte fallback.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "strata/gguf.hpp"
#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

const std::filesystem::path kModel = std::filesystem::path(STRATA_SOURCE_DIR) / "models" / "stories260K.gguf";

const Tokenizer& stories() {
  static const Tokenizer tok = Tokenizer::from_file(kModel.string());
  return tok;
}

nlohmann::json expected_greedy() {
  return nlohmann::json::parse(
      test::read_file_bytes(std::filesystem::path(STRATA_TEST_DATA) / "stories260K" / "expected_greedy.json"));
}

TokenId byte_token(uint8_t b) { return static_cast<TokenId>(3 + b); }

TEST(TokenizerSpm, VocabularyFlagsFromMetadata) {
  const Tokenizer& tok = stories();
  EXPECT_EQ(tok.size(), 512u);
  EXPECT_EQ(tok.model(), TokenizerModel::SentencePiece);
  EXPECT_EQ(tok.bos(), 1);
  EXPECT_EQ(tok.eos(), 2);
  EXPECT_EQ(tok.unk(), 0);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_FALSE(tok.add_eos());
  EXPECT_TRUE(tok.add_space_prefix());
  EXPECT_EQ(tok.token_type(0), TokenType::Unknown);
  EXPECT_EQ(tok.token_type(1), TokenType::Control);
  EXPECT_EQ(tok.token_type(3 + 0x41), TokenType::Byte);
  EXPECT_EQ(tok.token_text(3 + 0x41), "<0x41>");
  EXPECT_EQ(tok.find("\xE2\x96\x81" "a"), 261);
}

// llama2.c encodes the prompt with BOS and a dummy-prefix space; the prompt's tokens open tokens_after_bos.
TEST(TokenizerSpm, PromptsEncodeAsLlama2c) {
  const auto cases = expected_greedy().at("cases");
  ASSERT_GT(cases.size(), 0u);
  for (const auto& c : cases) {
    const std::string prompt = c.at("prompt").get<std::string>();
    const auto after_bos = c.at("tokens_after_bos").get<std::vector<TokenId>>();
    const auto ids = stories().encode(prompt);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 1) << "BOS first";
    const std::vector<TokenId> prompt_ids(ids.begin() + 1, ids.end());
    ASSERT_LE(prompt_ids.size(), after_bos.size());
    EXPECT_EQ(prompt_ids, std::vector<TokenId>(after_bos.begin(), after_bos.begin() + prompt_ids.size()))
        << "prompt " << test::escape_bytes(prompt);
    EXPECT_EQ(stories().decode(ids, {.remove_special = true}), prompt.empty() ? "" : " " + prompt);
  }
  EXPECT_EQ(stories().encode("Once upon a time", {.add_bos = false}), (std::vector<TokenId>{403, 407, 261, 378}));
  EXPECT_EQ(stories().encode(""), std::vector<TokenId>{1});
  EXPECT_TRUE(stories().encode("", {.add_bos = false}).empty());
}

// run.c prints the pieces with the leading space of the first piece after BOS stripped: decode() of the
// tokens without BOS does the same.
TEST(TokenizerSpm, GeneratedTokensDecodeToLlama2csText) {
  const auto cases = expected_greedy().at("cases");
  ASSERT_GT(cases.size(), 0u);
  for (const auto& c : cases) {
    const auto after_bos = c.at("tokens_after_bos").get<std::vector<TokenId>>();
    EXPECT_EQ(stories().decode(after_bos), c.at("text").get<std::string>());
  }
}

TEST(TokenizerSpm, CharactersOutsideTheVocabularyFallBackToBytes) {
  // "ß" is C3 9F; the 🦙 emoji is F0 9F A6 99. Neither is a token of this vocabulary ("é" is: 485).
  const auto ids = stories().encode("ß🦙é", {.add_bos = false});
  const std::vector<TokenId> expected{410,              byte_token(0xC3), byte_token(0x9F), byte_token(0xF0),
                                      byte_token(0x9F), byte_token(0xA6), byte_token(0x99), 485};
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(stories().decode(ids), "ß🦙é");
  EXPECT_EQ(stories().piece(byte_token(0xC3)), "\xC3");
}

TEST(TokenizerSpm, IllFormedUtf8IsKeptByteForByte) {
  const std::string bad = "a\xFF" "b\xE2\x96";
  const auto ids = stories().encode(bad, {.add_bos = false});
  EXPECT_EQ(stories().decode(ids), bad);
}

// tokenizer.ggml.add_space_prefix = false: no dummy prefix, and no leading space dropped when decoding.
TEST(TokenizerSpm, DummyPrefixFollowsTheMetadata) {
  const gguf::File file = gguf::File::open(kModel.string());
  VocabSpec spec = read_vocab_spec(file.metadata());
  EXPECT_FALSE(spec.add_space_prefix.has_value());
  spec.add_space_prefix = false;
  const Tokenizer tok(spec);
  EXPECT_FALSE(tok.add_space_prefix());
  const auto ids = tok.encode("Once upon a time", {.add_bos = false});
  ASSERT_FALSE(ids.empty());
  EXPECT_NE(tok.piece(ids.front()).front(), ' ');
  EXPECT_EQ(std::vector<TokenId>(ids.end() - 3, ids.end()), (std::vector<TokenId>{407, 261, 378}));
  EXPECT_EQ(tok.decode(ids), "Once upon a time");
  EXPECT_EQ(tok.decode(tok.encode(" Once", {.add_bos = false})), " Once");
}

}  // namespace
}  // namespace strata
