#include "strata/prefix_cache.hpp"

#include <algorithm>

#include "strata/error.hpp"

namespace strata {

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<size_t>(std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin()).first -
                             a.begin());
}

PrefixCache::PrefixCache(uint32_t slots, size_t min_prefix) : slots_(slots), min_prefix_(min_prefix) {
  if (slots == 0) throw Error("a prefix cache needs at least one slot");
}

PrefixCache::Choice PrefixCache::choose(std::span<const TokenId> prompt, const std::vector<bool>& busy) const {
  const auto is_busy = [&](uint32_t s) { return s < busy.size() && busy[s]; };
  uint32_t first_free = 0;
  while (first_free < slots_.size() && is_busy(first_free)) ++first_free;
  if (first_free == slots_.size()) throw Error("internal: a prompt cache choice with every slot busy");
  uint32_t best = first_free, lru = first_free;
  size_t best_len = 0;
  for (uint32_t s = first_free; s < slots_.size(); ++s) {
    if (is_busy(s)) continue;
    if (slots_[s].last_use < slots_[lru].last_use) lru = s;
    const size_t len = common_prefix(slots_[s].tokens, prompt);
    if (len < min_prefix_ || len < best_len) continue;
    if (len > best_len || slots_[s].last_use < slots_[best].last_use) {
      best = s;
      best_len = len;
    }
  }
  const uint32_t slot = best_len > 0 ? best : lru;
  return {slot, common_prefix(slots_[slot].tokens, prompt)};
}

void PrefixCache::record(uint32_t slot, std::vector<TokenId> tokens) {
  Slot& s = slots_.at(slot);
  s.tokens = std::move(tokens);
  s.last_use = ++clock_;
}

void PrefixCache::forget(uint32_t slot) { slots_.at(slot).tokens.clear(); }

}  // namespace strata
