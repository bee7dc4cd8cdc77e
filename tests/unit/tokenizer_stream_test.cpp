// The streaming decoder: complete UTF-8 only, a code point split across tokens held back, U+FFFD for bytes
// that cannot become valid UTF-8.
#include <gtest/gtest.h>

#include "strata/tokenizer.hpp"
#include "tokenizer_vectors.hpp"

namespace strata {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

const Tokenizer& stories() {
  static const Tokenizer tok =
      Tokenizer::from_file((std::filesystem::path(STRATA_SOURCE_DIR) / "models" / "stories260K.gguf").string());
  return tok;
}

TokenId byte_token(uint8_t b) { return static_cast<TokenId>(3 + b); }  // stories260K's <0xXX>

// Well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(TokenizerStream, HoldsASplitCodePointUntilItsLastByte) {
  StreamDecoder d(stories());
  EXPECT_EQ(d.push(byte_token(0xC3)), "");
  EXPECT_EQ(d.pending(), 1u);
  EXPECT_EQ(d.push(byte_token(0xA9)), "é");
  EXPECT_EQ(d.pending(), 0u);
  // 🦙 = F0 9F A6 99, one byte per token.
  EXPECT_EQ(d.push(byte_token(0xF0)), "");
  EXPECT_EQ(d.push(byte_token(0x9F)), "");
  EXPECT_EQ(d.push(byte_token(0xA6)), "");
  EXPECT_EQ(d.pending(), 3u);
  EXPECT_EQ(d.push(byte_token(0x99)), "🦙");
  EXPECT_EQ(d.finish(), "");
}

TEST(TokenizerStream, InvalidBytesBecomeReplacementCharacters) {
  StreamDecoder d(stories());
  EXPECT_EQ(d.push(byte_token(0xFF)), kReplacement) << "a byte that never starts a sequence";
  EXPECT_EQ(d.push(byte_token(0x80)), kReplacement) << "a stray continuation byte";
  EXPECT_EQ(d.push(byte_token(0xC3)), "");
  EXPECT_EQ(d.push(byte_token('a')), kReplacement + "a") << "a sequence cut short by ASCII";
  EXPECT_EQ(d.push(byte_token(0xED)), "");
  EXPECT_EQ(d.push(byte_token(0xA0)), kReplacement + kReplacement) << "ED A0 would be a surrogate";
  EXPECT_EQ(d.push(byte_token(0xE2)), "");
  EXPECT_EQ(d.push(byte_token(0x96)), "");
  EXPECT_EQ(d.finish(), kReplacement) << "an unfinished sequence at the end is one U+FFFD";
  EXPECT_EQ(d.pending(), 0u);
  EXPECT_EQ(d.finish(), "");
}

TEST(TokenizerStream, NormalPiecesAndTheDummyPrefix) {
  StreamDecoder d(stories());
  std::string out;
  for (const TokenId id : stories().encode("Once upon a time", {.add_bos = false})) out += d.push(id);
  EXPECT_EQ(out, " Once upon a time") << "a stream continues a prompt, so it keeps every space";
}

// Byte-level BPE splits emoji and CJK across tokens; streaming every vector input gives exactly the input, in
// chunks that are each valid UTF-8.
TEST(TokenizerStream, ByteLevelPiecesStreamAsValidUtf8) {
  const auto path = test::vocab_path("gpt-2");
  const Tokenizer tok = Tokenizer::from_file(path.string());
  const auto inputs = test::read_vector_inputs(path.string() + ".inp");
  ASSERT_GT(inputs.size(), 0u);
  size_t held_back = 0;
  for (const std::string& text : inputs) {
    StreamDecoder d(tok);
    std::string out;
    for (const TokenId id : tok.encode(text)) {
      const std::string chunk = d.push(id);
      EXPECT_TRUE(valid_utf8(chunk)) << test::escape_bytes(chunk);
      held_back += d.pending() > 0 ? 1 : 0;
      out += chunk;
    }
    out += d.finish();
    EXPECT_EQ(out, text);
  }
  EXPECT_GT(held_back, 0u) << "the inputs were meant to split some code points across tokens";
}

}  // namespace
}  // namespace strata
