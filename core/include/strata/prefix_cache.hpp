// Which KV slot a prompt runs on: the slots serve as a prompt cache (and, with runtime.slots above 1, several of
// them generate at once: a busy slot is not chosen). Each
// remembers the tokens it holds; a prompt takes the slot sharing the longest token prefix with it, which is then
// cut to that prefix and fed only the rest, so a multi-turn chat reads only its new turn.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "strata/tokenizer.hpp"

namespace strata {

class PrefixCache {
 public:
  struct Choice {
    uint32_t slot = 0;
    size_t reuse = 0;  // leading prompt tokens the slot already holds
  };

  // `min_prefix`: a shared prefix shorter than this (a BOS, a chat header) does not count as a match, so that a
  // new conversation takes the least recently used slot instead of cutting a recent one.
  explicit PrefixCache(uint32_t slots, size_t min_prefix = 8);

  // The slot holding the longest prefix of `prompt` (at least min_prefix tokens; ties: the least recently used),
  // else the least recently used slot (never used ones first). reuse is that slot's shared prefix, whatever its
  // length. Slots marked in `busy` (one flag per slot; empty: none) are passed over; one must be free.
  Choice choose(std::span<const TokenId> prompt, const std::vector<bool>& busy = {}) const;
  // After a run: the tokens `slot` now holds (prompt and fed reply), and it becomes the most recently used.
  void record(uint32_t slot, std::vector<TokenId> tokens);
  // After a failed run, when what the slot holds is not known.
  void forget(uint32_t slot);
  std::span<const TokenId> tokens(uint32_t slot) const { return slots_.at(slot).tokens; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }

 private:
  struct Slot {
    std::vector<TokenId> tokens;
    uint64_t last_use = 0;  // 0 = never used
  };
  std::vector<Slot> slots_;
  size_t min_prefix_;
  uint64_t clock_ = 0;
};

// The length of the longest common prefix of two token sequences.
size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b);

}  // namespace strata
