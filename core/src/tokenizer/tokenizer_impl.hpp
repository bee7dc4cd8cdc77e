// What a Tokenizer holds, shared by encoding (tokenizer.cpp) and decoding (detokenize.cpp).
#pragma once

#include "special_tokens.hpp"
#include "strata/tokenizer.hpp"
#include "vocab.hpp"

namespace strata {

struct Tokenizer::Impl {
  explicit Impl(tokenizer_detail::Vocab v) : vocab(std::move(v)), specials(vocab) {}

  tokenizer_detail::Vocab vocab;
  tokenizer_detail::SpecialTokenMatcher specials;
};

}  // namespace strata
