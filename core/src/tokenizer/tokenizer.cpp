// Encoding: special tokens cut out first, then each stretch of text through SentencePiece or through the
// pre-tokenizer and byte-level BPE; BOS/EOS as the vocabulary asks.
#include <limits>

#include "bpe.hpp"
#include "pretokenizer.hpp"
#include "spm.hpp"
#include "strata/error.hpp"
#include "strata/gguf.hpp"
#include "tokenizer_impl.hpp"

namespace strata {

using namespace tokenizer_detail;

namespace {

// SentencePiece spells a space as U+2581 ("▁").
void append_escaped_spaces(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out += c;
    }
  }
}

}  // namespace

Tokenizer::Tokenizer(VocabSpec spec) : impl_(std::make_unique<Impl>(build_vocab(std::move(spec)))) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_metadata(const gguf::Metadata& metadata) { return Tokenizer(read_vocab_spec(metadata)); }

Tokenizer Tokenizer::from_file(const std::string& path) {
  const gguf::File file = gguf::File::open(path);
  return from_metadata(file.metadata());
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  const Vocab& v = impl_->vocab;
  if (text.size() >= std::numeric_limits<uint32_t>::max()) {
    throw Error("cannot tokenize " + std::to_string(text.size()) + " bytes at once; split the text below 4 GiB");
  }
  std::vector<Fragment> fragments;
  impl_->specials.partition(text, options.parse_special, fragments);

  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (options.add_bos && v.add_bos) out.push_back(v.bos);
  if (v.model == TokenizerModel::SentencePiece) {
    // The dummy prefix goes before text at the start and after each special token, as in llama.cpp.
    bool after_special = true;
    std::string escaped;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      escaped.clear();
      if (v.add_space_prefix && after_special) escaped += "\xE2\x96\x81";
      append_escaped_spaces(escaped, text.substr(f.begin, f.end - f.begin));
      spm_encode(v, escaped, out);
      after_special = false;
    }
  } else {
    std::vector<ByteSpan> words;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        continue;
      }
      const std::string_view part = text.substr(f.begin, f.end - f.begin);
      split_words(v.pre, part, words);
      for (const ByteSpan& w : words) bpe_encode_word(v, part.substr(w.begin, w.end - w.begin), out);
    }
  }
  if (options.add_eos && v.add_eos) out.push_back(v.eos);
  return out;
}

size_t Tokenizer::size() const { return impl_->vocab.size(); }

std::string_view Tokenizer::token_text(TokenId id) const { return impl_->vocab.text[checked_index(impl_->vocab, id)]; }
TokenType Tokenizer::token_type(TokenId id) const { return impl_->vocab.type[checked_index(impl_->vocab, id)]; }
float Tokenizer::token_score(TokenId id) const { return impl_->vocab.score[checked_index(impl_->vocab, id)]; }

TokenId Tokenizer::find(std::string_view text) const { return impl_->vocab.find(text); }
TokenizerModel Tokenizer::model() const { return impl_->vocab.model; }
PreTokenizer Tokenizer::pre_tokenizer() const { return impl_->vocab.pre; }
TokenId Tokenizer::bos() const { return impl_->vocab.bos; }
TokenId Tokenizer::eos() const { return impl_->vocab.eos; }
TokenId Tokenizer::unk() const { return impl_->vocab.unk; }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab.add_eos; }
bool Tokenizer::add_space_prefix() const { return impl_->vocab.add_space_prefix; }

}  // namespace strata
