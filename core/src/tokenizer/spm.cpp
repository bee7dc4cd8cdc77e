#include "spm.hpp"

#include <cstdio>
#include <queue>
#include <string>

#include "strata/error.hpp"
#include "symbol_merge.hpp"
#include "utf8.hpp"

namespace strata::tokenizer_detail {
// Named apart from bpe.cpp's merge session (Bigram, Session), so that the two files compile in one unity batch.
namespace spm_merge {
namespace {

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t length;  // bytes of the pair when it was queued: a pair that has changed since is skipped
};

// Highest score first; on equal scores the pair further left.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class Session {
 public:
  Session(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void run(std::vector<TokenId>& out) {
    // One symbol per UTF-8 character; each byte of ill-formed input is a symbol of its own.
    for (size_t pos = 0; pos < text_.size();) {
      const Utf8Char c = decode_utf8(text_, pos);
      const uint32_t len = c.status == Utf8Status::Valid ? c.length : 1;
      const auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({static_cast<uint32_t>(pos), len, index - 1, index + 1});
      pos += len;
    }
    if (symbols_.empty()) return;
    symbols_.back().next = -1;
    merge_symbols(symbols_, queue_, [this](int32_t l, int32_t r) { try_add(l, r); });

    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols_[static_cast<size_t>(i)];
      const std::string_view piece = text_.substr(s.begin, s.length);
      const TokenId id = vocab_.find(piece);
      if (id != kNoToken) {
        out.push_back(id);
      } else {
        for (const char c : piece) out.push_back(byte_fallback(static_cast<uint8_t>(c)));
      }
    }
  }

 private:
  void try_add(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    const uint32_t length = l.length + r.length;
    const TokenId id = vocab_.find(text_.substr(l.begin, length));
    if (id == kNoToken) return;
    queue_.push({vocab_.score[static_cast<size_t>(id)], left, right, length});
  }

  TokenId byte_fallback(uint8_t b) const {
    const TokenId id = vocab_.byte_token[b];
    if (id != kNoToken) return id;
    if (vocab_.unk != kNoToken) return vocab_.unk;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", b);
    throw Error(vocab_.source + ": cannot encode byte " + hex +
                ": the vocabulary has no byte token <" + hex + "> and no unknown token");
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace
}  // namespace spm_merge

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  spm_merge::Session(vocab, text).run(out);
}

}  // namespace strata::tokenizer_detail
