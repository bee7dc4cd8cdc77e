// Byte-level BPE as llama.cpp runs it on "gpt2" vocabularies: one word (a piece of the pre-tokenizer's split)
// is spelt in GPT-2's byte characters, then the adjacent pair with the lowest merge rank is merged (the leftmost
// on ties) until no pair has a rank; each resulting symbol is a token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vocab.hpp"

namespace strata::tokenizer_detail {

// Appends the tokens of one word (raw bytes) to `out`.
void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out);

}  // namespace strata::tokenizer_detail
