#include "vocab.hpp"

#include <cstdio>
#include <string>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/suggest.hpp"

namespace strata::tokenizer_detail {
namespace {

TokenType to_token_type(int32_t t) {
  if (t < static_cast<int32_t>(TokenType::Undefined) || t > static_cast<int32_t>(TokenType::Byte)) {
    return TokenType::Undefined;
  }
  return static_cast<TokenType>(t);
}

// A special id from the metadata when it names a token, else the default (llama.cpp keeps the default for an
// id outside the vocabulary, and so does this, with a warning).
TokenId special_id(const Vocab& v, std::optional<int64_t> given, TokenId fallback, const char* key) {
  const auto n = static_cast<int64_t>(v.size());
  if (fallback >= n) fallback = kNoToken;
  if (!given) return fallback;
  if (*given < 0 || *given >= n) {
    log::warn(v.source + ": " + key + " = " + std::to_string(*given) + " is outside the vocabulary of " +
              std::to_string(n) + " tokens; using " +
              (fallback == kNoToken ? std::string("none") : std::to_string(fallback)));
    return fallback;
  }
  return static_cast<TokenId>(*given);
}

void fill_byte_tokens(Vocab& v) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    TokenId id = v.find(name);
    if (id == kNoToken) id = v.find(std::string(1, static_cast<char>(b)));
    v.byte_token[static_cast<size_t>(b)] = id;
  }
}

void read_merges(Vocab& v, const std::vector<std::string>& merges) {
  if (merges.empty()) {
    throw Error(v.source + ": tokenizer.ggml.merges is missing or empty; a 'gpt2' (byte-level BPE) vocabulary "
                "needs its merges: convert the model again with llama.cpp's convert_hf_to_gguf.py");
  }
  v.merge_rank.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    // The two parts are split at the first space after the first character, as llama.cpp does.
    if (m.size() < 3 || m.find(' ', 1) == std::string::npos) {
      throw Error(v.source + ": tokenizer.ggml.merges[" + std::to_string(i) + "] is '" + m +
                  "', not two token texts separated by a space");
    }
    v.merge_rank.emplace(m, static_cast<int32_t>(i));
  }
}

}  // namespace

size_t checked_index(const Vocab& vocab, TokenId id) {
  if (id < 0 || static_cast<size_t>(id) >= vocab.size()) {
    throw Error("token id " + std::to_string(id) + " is outside the vocabulary of " + vocab.source + " (" +
                std::to_string(vocab.size()) + " tokens)");
  }
  return static_cast<size_t>(id);
}

Vocab build_vocab(VocabSpec spec) {
  Vocab v;
  v.source = spec.source;
  if (spec.model == "llama") {
    v.model = TokenizerModel::SentencePiece;
  } else if (spec.model == "gpt2") {
    v.model = TokenizerModel::ByteLevelBpe;
  } else {
    throw Error(v.source + ": tokenizer.ggml.model is '" + spec.model +
                "'; this build reads 'llama' (SentencePiece BPE) and 'gpt2' (byte-level BPE) vocabularies");
  }
  const size_t n = spec.tokens.size();
  if (n == 0) throw Error(v.source + ": tokenizer.ggml.tokens is empty; the vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error(v.source + ": tokenizer.ggml.tokens has too many tokens");
  if (!spec.scores.empty() && spec.scores.size() < n) {
    throw Error(v.source + ": tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) +
                " entries for " + std::to_string(n) + " tokens");
  }
  if (!spec.types.empty() && spec.types.size() < n) {
    throw Error(v.source + ": tokenizer.ggml.token_type has " + std::to_string(spec.types.size()) +
                " entries for " + std::to_string(n) + " tokens");
  }

  v.text = std::move(spec.tokens);
  v.score.resize(n, 0.0f);
  v.type.resize(n, TokenType::Normal);
  v.ids.reserve(n);
  size_t duplicates = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!spec.scores.empty()) v.score[i] = spec.scores[i];
    if (!spec.types.empty()) v.type[i] = to_token_type(spec.types[i]);
    if (v.text[i].empty()) continue;  // an empty token can never be produced by encoding
    if (!v.ids.emplace(v.text[i], static_cast<TokenId>(i)).second) ++duplicates;
  }
  if (duplicates > 0) {
    log::warn(v.source + ": " + std::to_string(duplicates) +
              " token texts occur more than once in tokenizer.ggml.tokens; encoding uses the first id of each");
  }

  bool default_add_bos = false;
  TokenId default_bos = kNoToken, default_eos = kNoToken, default_unk = kNoToken;
  if (v.model == TokenizerModel::SentencePiece) {
    v.pre = PreTokenizer::Default;
    v.add_space_prefix = true;
    default_add_bos = true;
    default_bos = 1;
    default_eos = 2;
    default_unk = 0;
    fill_byte_tokens(v);
  } else {
    const PreTokenizerInfo* pre = find_pre_tokenizer(spec.pre);
    if (pre == nullptr) {
      throw Error(v.source + ": tokenizer.ggml.pre is '" + spec.pre + "', which this build does not know" +
                  did_you_mean(spec.pre, pre_tokenizer_names()) +
                  "; its split rules would be guessed, so the model is refused ('strata tokenize --help' lists "
                  "the known values)");
    }
    v.pre = pre->kind;
    v.ignore_merges = pre->ignore_merges;
    default_add_bos = pre->add_bos;
    // llama.cpp's defaults for byte-level BPE vocabularies.
    default_bos = 11;
    default_eos = 11;
    read_merges(v, spec.merges);
  }

  v.bos = special_id(v, spec.bos_id, default_bos, "tokenizer.ggml.bos_token_id");
  v.eos = special_id(v, spec.eos_id, default_eos, "tokenizer.ggml.eos_token_id");
  v.unk = special_id(v, spec.unk_id, default_unk, "tokenizer.ggml.unknown_token_id");
  v.add_bos = spec.add_bos.value_or(default_add_bos);
  v.add_eos = spec.add_eos.value_or(false);
  if (spec.add_space_prefix) v.add_space_prefix = *spec.add_space_prefix;
  if (v.add_bos && v.bos == kNoToken) {
    throw Error(v.source + ": tokenizer.ggml.add_bos_token is true, but the vocabulary has no BOS token "
                "(tokenizer.ggml.bos_token_id)");
  }
  if (v.add_eos && v.eos == kNoToken) {
    throw Error(v.source + ": tokenizer.ggml.add_eos_token is true, but the vocabulary has no EOS token "
                "(tokenizer.ggml.eos_token_id)");
  }
  return v;
}

}  // namespace strata::tokenizer_detail
