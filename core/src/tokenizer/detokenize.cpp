// Decoding: each token's bytes (SentencePiece's U+2581 back to a space, byte tokens to their byte, byte-level
// BPE's characters back to bytes), the dummy-prefix space dropped as llama.cpp drops it, and a streaming decoder
// that emits only complete UTF-8.
#include "byte_level.hpp"
#include "strata/error.hpp"
#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace strata {

using namespace tokenizer_detail;

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kEscapedSpace.size()) == kEscapedSpace) {
      out += ' ';
      pos += kEscapedSpace.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

// Byte-level BPE characters back to bytes; a character outside GPT-2's mapping is kept as it is.
std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = decode_utf8(text, pos);
    const int b = c.status == Utf8Status::Valid ? symbol_to_byte(c.code_point) : -1;
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text, pos, c.length);
    }
    pos += c.length;
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string Tokenizer::piece(TokenId id, bool render_special) const {
  const Vocab& v = impl_->vocab;
  const size_t i = checked_index(v, id);
  const std::string& text = v.text[i];
  switch (v.type[i]) {
    case TokenType::Control:
    case TokenType::Unknown:
      return render_special ? text : std::string();
    case TokenType::UserDefined:
      return text;
    case TokenType::Normal:
      return v.model == TokenizerModel::SentencePiece ? unescape_spaces(text) : byte_level_to_bytes(text);
    case TokenType::Byte:
      // "<0xXX>"
      if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' && hex_digit(text[3]) >= 0 &&
          hex_digit(text[4]) >= 0) {
        return std::string(1, static_cast<char>(hex_digit(text[3]) * 16 + hex_digit(text[4])));
      }
      return text;
    case TokenType::Undefined:
    case TokenType::Unused:
      break;
  }
  return std::string();
}

std::string Tokenizer::decode(std::span<const TokenId> tokens, const DecodeOptions& options) const {
  const Vocab& v = impl_->vocab;
  // llama.cpp drops the leading space of the first piece (the dummy prefix) unless a BOS it removes comes first.
  bool strip_space = v.add_space_prefix;
  if (options.remove_special && v.add_bos && !tokens.empty() && tokens.front() == v.bos) {
    strip_space = false;
    tokens = tokens.subspan(1);
  }
  if (options.remove_special && v.add_eos && !tokens.empty() && tokens.back() == v.eos) {
    tokens = tokens.first(tokens.size() - 1);
  }
  std::string out;
  for (const TokenId id : tokens) {
    const std::string p = piece(id, options.render_special);
    out.append(p, strip_space && !p.empty() && p[0] == ' ' ? 1 : 0);
    strip_space = false;
  }
  return out;
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string StreamDecoder::push(TokenId id) {
  held_ += tokenizer_->piece(id, render_special_);
  std::string out;
  size_t pos = 0;
  while (pos < held_.size()) {
    const Utf8Char c = decode_utf8(held_, pos);
    if (c.status == Utf8Status::Truncated) break;
    if (c.status == Utf8Status::Valid) {
      out.append(held_, pos, c.length);
    } else {
      append_utf8(out, kReplacementCharacter);
    }
    pos += c.length;
  }
  held_.erase(0, pos);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  if (!held_.empty()) append_utf8(out, kReplacementCharacter);
  held_.clear();
  return out;
}

}  // namespace strata
