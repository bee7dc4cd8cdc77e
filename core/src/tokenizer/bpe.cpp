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
      const TokenId whole = vocab_.find(spelt_);
      if (whole != kNoToken) {
        out.push_back(whole);
        return;
      }
    }
    merge_symbols(symbols_, queue_, [this](int32_t l, int32_t r) { try_add(l, r); });
    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols_[static_cast<size_t>(i)];
      const std::string_view piece = std::string_view(spelt_).substr(s.begin, s.length);
      const TokenId id = vocab_.find(piece);
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

  // A merged symbol that is not a token (a vocabulary whose merges and tokens disagree): one token per byte
  // character, or the unknown token.
  void spell_by_bytes(std::string_view piece, std::vector<TokenId>& out) const {
    for (size_t pos = 0; pos < piece.size();) {
      // Byte characters are U+0021..U+0143: one or two UTF-8 bytes.
      const size_t len = static_cast<uint8_t>(piece[pos]) < 0x80 ? 1 : 2;
      const std::string_view ch = piece.substr(pos, len);
      pos += len;
      TokenId id = vocab_.find(ch);
      if (id == kNoToken) id = vocab_.unk;
      if (id == kNoToken) {
        throw Error(vocab_.source + ": cannot encode the byte spelt '" + std::string(ch) +
                    "': neither it nor an unknown token is in the vocabulary");
      }
      out.push_back(id);
    }
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
