#include "special_tokens.hpp"

#include <algorithm>

namespace strata::tokenizer_detail {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : candidate_(vocab.size()) {
  nodes_.emplace_back();
  std::vector<TokenId> ids;
  for (size_t i = 0; i < vocab.size(); ++i) {
    const TokenType t = vocab.type[i];
    if (t != TokenType::Control && t != TokenType::Unknown && t != TokenType::UserDefined) continue;
    const auto id = static_cast<TokenId>(i);
    // An empty text matches nowhere; a duplicate text is matched as its first id.
    if (vocab.text[i].empty() || vocab.find(vocab.text[i]) != id) continue;
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
    const size_t la = vocab.text[static_cast<size_t>(a)].size(), lb = vocab.text[static_cast<size_t>(b)].size();
    return la != lb ? la > lb : a < b;
  });
  for (size_t rank = 0; rank < ids.size(); ++rank) {
    const auto id = static_cast<size_t>(ids[rank]);
    const std::string& text = vocab.text[id];
    uint32_t node = 0;
    for (const char ch : text) {
      const auto byte = static_cast<uint8_t>(ch);
      uint32_t next = child(node, byte);
      if (next == 0) {
        next = static_cast<uint32_t>(nodes_.size());
        auto& kids = nodes_[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, uint32_t{0})),
                    std::make_pair(byte, next));
        nodes_.emplace_back();
      }
      node = next;
    }
    nodes_[node].token = ids[rank];
    const bool always = vocab.type[id] == TokenType::UserDefined;
    candidate_[id] = {static_cast<uint32_t>(rank), always};
    first_byte_[static_cast<uint8_t>(text[0])] = true;
    any_ = true;
    any_always_ = any_always_ || always;
  }
}

uint32_t SpecialTokenMatcher::child(uint32_t node, uint8_t byte) const {
  const auto& kids = nodes_[node].children;
  const auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(byte, uint32_t{0}));
  return it != kids.end() && it->first == byte ? it->second : 0;
}

void SpecialTokenMatcher::partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const {
  out.clear();
  if (text.empty()) return;
  const auto n = static_cast<uint32_t>(text.size());
  if (!any_ || (!parse_special && !any_always_)) {
    out.push_back({0, n, kNoToken});
    return;
  }

  struct Occurrence {
    uint32_t priority, begin, end;
    TokenId token;
  };
  std::vector<Occurrence> found;
  for (uint32_t pos = 0; pos < n; ++pos) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) continue;
    uint32_t node = 0;
    for (uint32_t i = pos; i < n; ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node == 0) break;
      const TokenId t = nodes_[node].token;
      if (t == kNoToken) continue;
      const Candidate& c = candidate_[static_cast<size_t>(t)];
      if (parse_special || c.always) found.push_back({c.priority, pos, i + 1, t});
    }
  }
  if (found.empty()) {
    out.push_back({0, n, kNoToken});
    return;
  }

  // Texts in priority order, each claiming its occurrences left to right where nothing was claimed yet.
  std::sort(found.begin(), found.end(), [](const Occurrence& a, const Occurrence& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.begin < b.begin;
  });
  std::vector<bool> claimed(n, false);
  std::vector<Occurrence> taken;
  for (const Occurrence& o : found) {
    bool free = true;
    for (uint32_t i = o.begin; i < o.end && free; ++i) free = !claimed[i];
    if (!free) continue;
    for (uint32_t i = o.begin; i < o.end; ++i) claimed[i] = true;
    taken.push_back(o);
  }
  std::sort(taken.begin(), taken.end(), [](const Occurrence& a, const Occurrence& b) { return a.begin < b.begin; });
  uint32_t pos = 0;
  for (const Occurrence& o : taken) {
    if (pos < o.begin) out.push_back({pos, o.begin, kNoToken});
    out.push_back({o.begin, o.end, o.token});
    pos = o.end;
  }
  if (pos < n) out.push_back({pos, n, kNoToken});
}

}  // namespace strata::tokenizer_detail
