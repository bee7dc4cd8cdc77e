// Special-token splitting: control tokens only with parse_special, user-defined tokens always (as llama.cpp and
// Hugging Face do), longer texts first; SentencePiece's dummy prefix after a special token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

const Tokenizer& vocab(const std::string& name) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, Tokenizer::from_file(test::vocab_path(name).string())).first;
  return it->second;
}

bool contains(const std::vector<TokenId>& ids, TokenId id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

std::vector<TokenId> concat(std::initializer_list<std::vector<TokenId>> parts) {
  std::vector<TokenId> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(TokenizerSpecial, ControlTokensOnlyWithParseSpecial) {
  const Tokenizer& gpt2 = vocab("gpt-2");
  ASSERT_EQ(gpt2.token_type(50256), TokenType::Control);
  const std::string text = "Hello<|endoftext|>world";
  const auto parsed = gpt2.encode(text, {.parse_special = true});
  EXPECT_EQ(parsed, concat({gpt2.encode("Hello"), {50256}, gpt2.encode("world")}));
  const auto plain = gpt2.encode(text, {.parse_special = false});
  EXPECT_FALSE(contains(plain, 50256));
  EXPECT_EQ(gpt2.decode(plain), text);
  EXPECT_EQ(gpt2.decode(parsed), "Helloworld") << "control tokens give nothing unless rendered";
  EXPECT_EQ(gpt2.decode(parsed, {.render_special = true}), text);
}

TEST(TokenizerSpecial, SentencePieceAddsTheDummyPrefixAfterASpecialToken) {
  const Tokenizer& phi3 = vocab("phi-3");
  ASSERT_EQ(phi3.token_type(32010), TokenType::Control);  // <|user|>
  ASSERT_EQ(phi3.token_type(32007), TokenType::Control);  // <|end|>
  const auto ids = phi3.encode("<|user|>Hi there<|end|>", {.parse_special = true});
  const auto hi = phi3.encode("Hi there", {.add_bos = false});
  EXPECT_EQ(ids, concat({{phi3.bos(), 32010}, hi, {32007}}));
  const auto plain = phi3.encode("<|user|>Hi there<|end|>", {.parse_special = false});
  EXPECT_FALSE(contains(plain, 32010));
  EXPECT_FALSE(contains(plain, 32007));
}

// User-defined tokens are cut out even without parse_special: phi-3's "</s>" and DeepSeek's "ö".
TEST(TokenizerSpecial, UserDefinedTokensAlwaysMatch) {
  const Tokenizer& phi3 = vocab("phi-3");
  ASSERT_EQ(phi3.token_type(2), TokenType::UserDefined);
  ASSERT_EQ(phi3.token_text(2), "</s>");
  EXPECT_TRUE(contains(phi3.encode("a</s>b", {.parse_special = false}), 2));

  const Tokenizer& ds = vocab("deepseek-llm");
  const TokenId o_umlaut = ds.find("ö");
  ASSERT_NE(o_umlaut, kNoToken);
  ASSERT_EQ(ds.token_type(o_umlaut), TokenType::UserDefined);
  const auto ids = ds.encode("schön", {.add_bos = false, .parse_special = false});
  EXPECT_EQ(ids, concat({ds.encode("sch", {.add_bos = false}), {o_umlaut}, ds.encode("n", {.add_bos = false})}));
  EXPECT_EQ(ds.decode(ids), "schön");
}

// A vocabulary of byte tokens and two control tokens whose texts overlap: the longer text claims first.
TEST(TokenizerSpecial, LongerTextsAreMatchedFirst) {
  VocabSpec spec;
  spec.source = "overlap test vocabulary";
  spec.model = "llama";
  spec.tokens = {"<unk>", "<s>", "</s>"};
  spec.types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    spec.tokens.emplace_back(name);
    spec.types.push_back(6);
  }
  spec.tokens.insert(spec.tokens.end(), {"<x>", "x><y>"});
  spec.types.insert(spec.types.end(), {3, 3});
  const Tokenizer tok(spec);
  const TokenId x = 259, xy = 260;
  auto bytes = [](std::string_view s) {
    std::vector<TokenId> v;
    for (const char c : s) v.push_back(3 + static_cast<uint8_t>(c));
    return v;
  };
  // "<x><y>": "x><y>" (longer) is taken first, leaving "<"; "<x><x>": both occurrences of "<x>".
  EXPECT_EQ(tok.encode("<x><y>", {.add_bos = false, .parse_special = true}),
            concat({bytes("\xE2\x96\x81<"), {xy}}));
  EXPECT_EQ(tok.encode("<x><x>", {.add_bos = false, .parse_special = true}), (std::vector<TokenId>{x, x}));
  EXPECT_EQ(tok.encode("<x><y>", {.add_bos = false, .parse_special = false}), bytes("\xE2\x96\x81<x><y>"));
}

}  // namespace
}  // namespace strata
