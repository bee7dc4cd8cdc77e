// A validated vocabulary: token texts, scores and types by id, the text-to-id map, the special ids and flags
// with llama.cpp's defaults filled in, SentencePiece's byte-fallback tokens and byte-level BPE's merge ranks.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pretokenizer.hpp"
#include "strata/tokenizer.hpp"

namespace strata::tokenizer_detail {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct Vocab {
  std::string source;
  TokenizerModel model = TokenizerModel::SentencePiece;
  PreTokenizer pre = PreTokenizer::Default;
  bool ignore_merges = false;

  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<TokenType> type;
  StringMap<TokenId> ids;  // the first id of each non-empty text

  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId unk = kNoToken;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;

  // SentencePiece byte fallback: the <0xXX> token of each byte (else the one-byte token), or kNoToken.
  std::array<TokenId, 256> byte_token{};
  // Byte-level BPE: "left right" (a line of tokenizer.ggml.merges) -> rank, the first line winning.
  StringMap<int32_t> merge_rank;

  TokenId find(std::string_view s) const {
    const auto it = ids.find(s);
    return it == ids.end() ? kNoToken : it->second;
  }
  size_t size() const { return text.size(); }
};

// The index of a token id; throws strata::Error for an id outside the vocabulary.
size_t checked_index(const Vocab& vocab, TokenId id);

// Throws strata::Error naming spec.source and the field at fault.
Vocab build_vocab(VocabSpec spec);

}  // namespace strata::tokenizer_detail
