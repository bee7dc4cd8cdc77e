// The pre-tokenizers of byte-level BPE vocabularies: each splits text into words with a list of regular
// expressions applied in turn (every piece of the previous split is split again; both the matches and the text
// between them become pieces), as Hugging Face's Split pre-tokenizers and llama.cpp's unicode_regex_split do.
// The regexes are implemented as hand-written scanners over code points and their Unicode classes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "strata/tokenizer.hpp"

namespace strata::tokenizer_detail {

// A tokenizer.ggml.pre value and what it selects.
struct PreTokenizerInfo {
  std::string_view name;
  PreTokenizer kind;
  bool ignore_merges;   // a word that is itself a token is not merged (llama3-style vocabularies)
  bool add_bos;         // llama.cpp's default for add_bos_token
};

// nullptr for a name this build does not know. "" is "default".
const PreTokenizerInfo* find_pre_tokenizer(std::string_view name);
const std::vector<PreTokenizerInfo>& known_pre_tokenizers();

struct ByteSpan {
  uint32_t begin, end;
};

// Splits `text` into words (byte ranges, in order, covering the text). Invalid UTF-8 is classified as U+FFFD.
void split_words(PreTokenizer kind, std::string_view text, std::vector<ByteSpan>& words);

}  // namespace strata::tokenizer_detail
