// SentencePiece BPE as llama.cpp runs it on "llama" vocabularies: start from single characters, repeatedly
// merge the adjacent pair whose concatenation is the token with the highest score (the leftmost pair on ties),
// then spell what is left through byte fallback.
#pragma once

#include <string_view>
#include <vector>

#include "vocab.hpp"

namespace strata::tokenizer_detail {

// `text` has its spaces already replaced by U+2581 (and the dummy prefix added). Appends to `out`.
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

}  // namespace strata::tokenizer_detail
