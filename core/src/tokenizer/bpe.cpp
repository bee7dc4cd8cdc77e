#include "bpe.hpp"

#include <queue>

#include "byte_level.hpp"
#include "strata/error.hpp"
#include "symbol_merge.hpp"

namespace strata::tokenizer_detail {
namespace {

struct Bigram {
  int32_t rank;
  int32_t left, right;
  uint32_t length;  // bytes of the pair when it was queued: a pair that has changed since is skipped
};

// Lowest rank first; on equal ranks the pair further left.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class Session {
 public:
  Session(const Vocab& vocab, std::string_view word) : vocab_(vocab) {
    spelt_.reserve(word.size() * 2);
    symbols_.reserve(word.size());
    for (const char c : word) {
      const std::string_view sym = byte_to_symbol(static_cast<uint8_t>(c));
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({static_cast<uint32_t>(spelt_.size()), static_cast<uint32_t>(sym.size()), index - 1,
                          index + 1});
      spelt_ += sym;
    }
    if (!symbols_.empty()) symbols_.back().next = -1;
  }

  void run(std::vector<TokenId>& out) {
    if (symbols_.empty()) return;
    if (vocab_.ignore_merges) {
      const TokenId whole = spelling(spelt_);
      if (whole != kNoToken) {
        out.push_back(whole);
        return;
      }
    }
    merge_symbols(symbols_, queue_, [this](int32_t l, int32_t r) { try_add(l, r); });
    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols_[static_cast<size_t>(i)];
      const std::string_view piece = std::string_view(spelt_).substr(s.begin, s.length);
      const TokenId id = spelling(piece);
      if (id != kNoToken) {
        out.push_back(id);
      } else {
        spell_by_bytes(piece, out);
      }
    }
  }

 private:
  void try_add(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    key_.assign(spelt_, l.begin, l.length);
    key_ += ' ';
    key_.append(spelt_, r.begin, r.length);
    const auto it = vocab_.merge_rank.find(key_);
    if (it == vocab_.merge_rank.end()) return;
    queue_.push({it->second, left, right, l.length + r.length});
  }

  // The token spelt `piece` in byte characters: a normal token only. A user-defined or control token with the same
  // text stands for other bytes (DeepSeek's vocabularies add "ü", U+00FC, as a user-defined token: it decodes to
  // C3 BC, where the byte character U+00FC stands for the byte FC), so taking it would change the text.
  TokenId spelling(std::string_view piece) const {
    const TokenId id = vocab_.find(piece);
    return id != kNoToken && vocab_.type[static_cast<size_t>(id)] == TokenType::Normal ? id : kNoToken;
  }

  // A merged symbol that is not a token (a vocabulary whose merges and tokens disagree): one token per byte
  // character. A byte the vocabulary cannot spell (only ill-formed UTF-8 has such bytes: DeepSeek's vocabularies
  // lack F5-FF) becomes U+FFFD, as llama.cpp makes every ill-formed byte; the unknown token where even that fails.
  void spell_by_bytes(std::string_view piece, std::vector<TokenId>& out) const {
    for (size_t pos = 0; pos < piece.size();) {
      // Byte characters are U+0021..U+0143: one or two UTF-8 bytes.
      const size_t len = static_cast<uint8_t>(piece[pos]) < 0x80 ? 1 : 2;
      const std::string_view ch = piece.substr(pos, len);
      pos += len;
      const TokenId id = spelling(ch);
      if (id != kNoToken) {
        out.push_back(id);
      } else if (!spell_replacement_character(out)) {
        if (vocab_.unk == kNoToken) {
          throw Error(vocab_.source + ": cannot encode the byte spelt '" + std::string(ch) +
                      "': neither it, U+FFFD nor an unknown token is in the vocabulary");
        }
        out.push_back(vocab_.unk);
      }
    }
  }

  // U+FFFD as the vocabulary's merges spell it; false when a byte of it has no token (then nothing is added).
  bool spell_replacement_character(std::vector<TokenId>& out) const {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
    for (const char b : kReplacement) {
      if (spelling(byte_to_symbol(static_cast<uint8_t>(b))) == kNoToken) return false;
    }
    Session(vocab_, kReplacement).run(out);  // every byte spellable: no way back here
    return true;
  }

  const Vocab& vocab_;
  std::string spelt_;
  std::string key_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void bpe_encode_word(const Vocab& vocab, std::string_view word, std::vector<TokenId>& out) {
  Session(vocab, word).run(out);
}

}  // namespace strata::tokenizer_detail
