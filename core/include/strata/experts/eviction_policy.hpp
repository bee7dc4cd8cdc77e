// Which cached expert is worth least: the cache asks its policy for each key's heat (larger = keep) and evicts
// the coldest slot for the hottest miss. Policies see every use, resident or not, so misses have a heat too.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "strata/config.hpp"
#include "strata/experts/expert_key.hpp"

namespace strata::experts {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual std::string_view name() const = 0;
  // A new window begins: the policy's clock advances by one.
  virtual void next_window() = 0;
  // Key was used in the current window by `tokens` tokens (once per distinct expert and window).
  virtual void use(ExpertKey key, uint32_t tokens) = 0;
  // A starting heat from a saved profile: the expected tokens per position routed to key.
  virtual void seed(ExpertKey key, double tokens_per_position) = 0;
  // Comparable across keys at the same clock; equal heats are broken by key by the caller.
  virtual double heat(ExpertKey key) const = 0;
};

// Least recently used: heat is the window of the last use (0 = never). Profiles do not seed it.
std::unique_ptr<EvictionPolicy> make_lru_policy(KeySpace keys);

// Frequency-weighted with decay: heat is the tokens routed to the key, each window's weight halving every
// `half_life_windows` windows, so a once-hot expert cools and a steadily used one stays. A profile seeds each
// key with the heat its rate would reach in steady state at one token per window.
inline constexpr double kLfuHalfLifeWindows = 64.0;
std::unique_ptr<EvictionPolicy> make_lfu_policy(KeySpace keys, double half_life_windows = kLfuHalfLifeWindows);

// The policy the launch's experts.policy names.
std::unique_ptr<EvictionPolicy> make_eviction_policy(config::CachePolicy policy, KeySpace keys);

}  // namespace strata::experts
