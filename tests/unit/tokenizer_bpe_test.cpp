// Byte-level BPE on text that is not well-formed UTF-8: the bytes come back as they went in where the vocabulary
// can spell them, and as U+FFFD where it cannot. Found by tests/fuzz/tokenizer_fuzz.cpp: DeepSeek's vocabulary
// spelt the byte FC with its user-defined token "ü", which decodes to C3 BC.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

constexpr EncodeOptions kBare{.add_bos = false, .add_eos = false};
const std::string kReplacement = "\xEF\xBF\xBD";

const Tokenizer& gpt2() {
  static const Tokenizer t = Tokenizer::from_file(test::vocab_path("gpt-2").string());
  return t;
}

const Tokenizer& deepseek() {
  static const Tokenizer t = Tokenizer::from_file(test::vocab_path("deepseek-llm").string());
  return t;
}

TEST(TokenizerBpe, IllFormedUtf8IsKeptByteForByteWhereEveryByteHasAToken) {
  const std::vector<std::string> ill_formed{"a\xFF" "b\xE2\x96", "\xDF\xFC\xD8", "\xC0\x80"};
  for (const std::string& bad : ill_formed) EXPECT_EQ(gpt2().decode(gpt2().encode(bad, kBare)), bad);
}

TEST(TokenizerBpe, BytesTheVocabularyCannotSpellBecomeReplacementCharacters) {
  // DeepSeek's vocabulary has no normal token for the bytes F5-FF (its "ü", U+00FC, is a user-defined token).
  EXPECT_EQ(deepseek().decode(deepseek().encode("\xFC", kBare)), kReplacement);
  EXPECT_EQ(deepseek().decode(deepseek().encode("\xDF\xFC\xD8", kBare)), "\xDF" + kReplacement + "\xD8");
  EXPECT_EQ(deepseek().encode("\xFC", kBare), deepseek().encode(kReplacement, kBare));
  // A well-formed "ü" in the text is still that user-defined token, and comes back as itself.
  const std::vector<TokenId> u = deepseek().encode("\xC3\xBC", kBare);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(deepseek().token_type(u[0]), TokenType::UserDefined);
  EXPECT_EQ(deepseek().decode(u), "\xC3\xBC");
  // Bytes it can spell stay as they are, well-formed or not.
  EXPECT_EQ(deepseek().decode(deepseek().encode("a\xE2\x96 b\x80", kBare)), "a\xE2\x96 b\x80");
}

}  // namespace
}  // namespace strata
