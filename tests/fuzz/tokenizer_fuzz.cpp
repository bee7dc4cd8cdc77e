// libFuzzer target for the tokenizers (core/src/tokenizer/): a prompt is whatever a user sent, so any bytes must
// encode to ids inside the vocabulary, and decoding those ids must give the bytes back. The first byte picks one
// of the real vocabularies named at build time (STRATA_FUZZ_VOCABS: SentencePiece with byte fallback, byte-level
// BPE with GPT-2's and DeepSeek's pre-tokenizers); the rest is the text.
//
// What the round trip may change: SentencePiece writes a space as U+2581, so a U+2581 in the text decodes as a
// space (as in llama.cpp); a byte-level vocabulary that cannot spell a byte (DeepSeek's lack F5-FF, bytes only
// ill-formed UTF-8 has) gives U+FFFD for it; and a vocabulary without byte tokens spells what it lacks as its
// unknown token, which has no bytes to give back (then only the ids are checked). Every pre-tokenizer's split of
// the text is checked as well.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_fixtures.hpp"
#include "strata/tokenizer.hpp"

namespace {

strata::EncodeOptions bare() {
  strata::EncodeOptions o;
  o.add_bos = false;
  o.add_eos = false;
  return o;
}

struct Vocabulary {
  strata::Tokenizer tok;
  std::array<bool, 256> spells{};  // byte b, encoded alone, decodes to itself
};

const std::vector<std::unique_ptr<Vocabulary>>& vocabularies() {
  static const std::vector<std::unique_ptr<Vocabulary>> all = [] {
    std::vector<std::unique_ptr<Vocabulary>> v;
    for (const std::string& path : strata::fuzz::fixture_paths(STRATA_FUZZ_VOCABS)) {
      auto voc = std::make_unique<Vocabulary>(Vocabulary{strata::Tokenizer::from_file(path)});
      for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        voc->spells[static_cast<size_t>(b)] = voc->tok.decode(voc->tok.encode(one, bare())) == one;
      }
      v.push_back(std::move(voc));
    }
    return v;
  }();
  return all;
}

std::string escaped(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7F && b != '\\') {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += hex;
    }
  }
  return out;
}

[[noreturn]] void finding(const std::string& what, std::string_view text, std::string_view back = {}) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n  text:    \"%s\"\n  decoded: \"%s\"\n", what.c_str(),
               escaped(text).c_str(), escaped(back).c_str());
  std::abort();
}

// The text as the vocabulary gives it back.
std::string expected(const Vocabulary& v, std::string_view text) {
  std::string out;
  if (v.tok.model() == strata::TokenizerModel::SentencePiece) {
    static constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
    for (size_t pos = 0; pos < text.size();) {
      if (text.substr(pos, kSpaceMark.size()) == kSpaceMark) {
        out += ' ';
        pos += kSpaceMark.size();
      } else {
        out += text[pos++];
      }
    }
    return out;
  }
  for (const char c : text) {
    if (v.spells[static_cast<uint8_t>(c)]) {
      out += c;
    } else {
      out += "\xEF\xBF\xBD";
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& vocabs = vocabularies();
  const size_t which = data[0] % vocabs.size();
  const Vocabulary& v = *vocabs[which];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

  // No BOS or EOS: llama.cpp's detokenizer, which Strata's follows, keeps SentencePiece's dummy-prefix space when a
  // BOS comes first, so only the bare text's ids round-trip. Special-token texts stay text.
  const std::vector<strata::TokenId> ids = v.tok.encode(text, bare());
  bool unknown = false;
  for (const strata::TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= v.tok.size()) {
      finding("vocabulary " + std::to_string(which) + ": an id outside the vocabulary", text);
    }
    unknown = unknown || id == v.tok.unk();
  }
  if (!unknown) {
    const std::string back = v.tok.decode(ids);
    if (back != expected(v, text)) {
      finding("vocabulary " + std::to_string(which) + ": decode(encode(text)) is not the text", text, back);
    }
  }
  // Every pre-tokenizer, the ones without a vocabulary here included (o200k, GLM-4.5's, DeepSeek-V3's, Qwen's):
  // its words are non-empty views of the text, in order, covering it.
  for (int kind = 0; kind <= static_cast<int>(strata::PreTokenizer::Tekken); ++kind) {
    size_t at = 0;
    for (const std::string_view word : strata::pre_tokenize(static_cast<strata::PreTokenizer>(kind), text)) {
      if (word.empty() || word.data() != text.data() + at) {
        finding("pre-tokenizer " + std::to_string(kind) + ": its words do not tile the text", text);
      }
      at += word.size();
    }
    if (at != text.size()) finding("pre-tokenizer " + std::to_string(kind) + ": its words do not cover the text", text);
  }
  return 0;
}
