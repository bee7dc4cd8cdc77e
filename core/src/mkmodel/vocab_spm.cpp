#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vocab.hpp"

namespace strata::mkmodel {
namespace {

// Pieces in a fixed order: "▁" alone, then for each base string the word-start form "▁" (U+2581) + s and s itself,
// as SentencePiece vocabularies hold them. Base strings: single characters, then all strings of lower-case
// letters of length 2, 3, ...
class PieceSource {
 public:
  std::string next() {
    if (!started_) {
      started_ = true;
      return "\u2581";
    }
    if (!bare_.empty()) return std::exchange(bare_, std::string());
    bare_ = next_base();
    return "\u2581" + bare_;
  }

 private:
  static constexpr std::string_view kSingles =
      "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,;:!?'\"-()";
  static constexpr std::string_view kLetters = "etaoinshrdlcumwfgypbvkjxqz";

  std::string next_base() {
    if (single_ < kSingles.size()) return std::string(1, kSingles[single_++]);
    // An odometer over letter strings; when it wraps, the strings grow by one.
    if (digits_.empty()) {
      digits_.assign(2, 0);
    } else {
      size_t i = digits_.size();
      while (i > 0 && ++digits_[i - 1] == kLetters.size()) digits_[--i] = 0;
      if (i == 0) digits_.assign(digits_.size() + 1, 0);
    }
    std::string s;
    for (size_t d : digits_) s += kLetters[d];
    return s;
  }

  bool started_ = false;
  size_t single_ = 0;
  std::vector<size_t> digits_;
  std::string bare_;
};

}  // namespace

void write_spm_vocab(gguf::Writer& w, uint32_t n_vocab) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {token_type_value(TokenType::Unknown), token_type_value(TokenType::Control),
                                token_type_value(TokenType::Control)};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.emplace_back(name);
    types.push_back(token_type_value(TokenType::Byte));
  }
  PieceSource pieces;
  while (tokens.size() < n_vocab) {
    tokens.push_back(pieces.next());
    types.push_back(token_type_value(TokenType::Normal));
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i - 259);

  w.set_string("tokenizer.ggml.model", "llama");
  w.set_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
  w.set_array("tokenizer.ggml.scores", std::span<const float>(scores));
  w.set_array("tokenizer.ggml.token_type", std::span<const int32_t>(types));
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace strata::mkmodel
