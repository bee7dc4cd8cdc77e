// One device's expert cache: which (layer, expert) sits in which slot, how it was filled, and the bounded swaps
// between windows that move hot misses into cold slots.
//
// A window's life: begin_window(n) advances the policy's clock; record(layer, uses) per layer counts hits and
// misses and tells the policy; plan_swaps(max) then proposes up to `max` moves, hottest miss into coldest slot of
// its class, never evicting an expert the current window used and only where the miss is hotter than what it
// replaces. A move is pending until commit(move) (the copy landed) or abort(move) (it failed): meanwhile
// slot_of() and content() still report the old expert, but usable_slot() reports neither the old nor the new one
// for that slot, so a plan made while the copy runs never reads the slot being written. Ties are broken by
// (layer, expert) and by slot index, so the same uses give the same moves.
//
// Not thread-safe: the host thread that plans a window also records it and commits or aborts its moves.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "strata/experts/eviction_policy.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/expert_key.hpp"
#include "strata/experts/expert_profile.hpp"
#include "strata/experts/expert_stats.hpp"
#include "strata/experts/residency_view.hpp"
#include "strata/experts/slot_budget.hpp"

namespace strata::experts {

struct SwapMove {
  uint32_t slot = 0;
  std::optional<ExpertKey> evicted;  // nullopt: the slot was empty
  ExpertKey incoming;
  bool operator==(const SwapMove&) const = default;
};

// How a failed copy left its slot: not started (the old expert is intact and stays) or partly written (the slot
// is emptied).
enum class AbortedCopy { NotStarted, Partial };

class ExpertCache final : public ResidencyView {
 public:
  // Starts empty; fill_uniform or fill_from_profile places the first experts.
  ExpertCache(ExpertGeometry geometry, SlotBudget budget, std::unique_ptr<EvictionPolicy> policy);

  // Each layer gets its budget.layer_slots[layer] slots holding its experts 0, 1, ... (no use is known yet).
  void fill_uniform();
  // Each class's slots go to its layers' most used experts in the profile (ties by (layer, expert)), and the
  // policy is seeded with the profile's rates. Throws strata::Error when the profile's shape is not the model's.
  void fill_from_profile(const ExpertProfile& profile);
  // Each class's slots go to its layers' keys in the order given, until the class is full (keys the geometry
  // lacks, or listed twice, are skipped): the experts dealt to this card (expert_deal.hpp). With a profile, the
  // policy is seeded with its rates as fill_from_profile does.
  void fill_keys(std::span<const ExpertKey> keys, const ExpertProfile* seed = nullptr);

  uint32_t n_slots() const { return static_cast<uint32_t>(slots_.size()); }
  const SlotBudget& budget() const { return budget_; }
  const ExpertGeometry& geometry() const { return geometry_; }
  // Committed residency: the old expert while a move into its slot is pending.
  std::optional<uint32_t> slot_of(ExpertKey key) const;
  std::optional<ExpertKey> content(uint32_t slot) const;
  bool pending(uint32_t slot) const;
  std::optional<uint32_t> usable_slot(ExpertKey key) const override;

  void begin_window(uint32_t positions);
  // The distinct experts one layer of the current window uses. Throws strata::Error for an expert the layer does
  // not have, or one listed twice.
  void record(uint32_t layer, std::span<const ExpertUse> uses);
  std::vector<SwapMove> plan_swaps(uint32_t max_moves);
  // Throws strata::Error when `move` is not a pending move of this cache.
  void commit(const SwapMove& move);
  void abort(const SwapMove& move, AbortedCopy how);
  size_t pending_moves() const { return pending_count_; }

  const ExpertStats& stats() const { return stats_; }
  // Zeroes the counts (not the residency, the policy's heat or pending moves): a bench counts each test apart.
  void reset_stats();
  const EvictionPolicy& policy() const { return *policy_; }

 private:
  struct Slot {
    std::optional<ExpertKey> key;
    std::optional<SwapMove> move;  // the pending copy into this slot
  };
  void clear();
  void place(uint32_t slot, ExpertKey key);
  void require_no_pending(const char* what) const;
  const SwapMove& pending_move(const SwapMove& move) const;

  ExpertGeometry geometry_;
  SlotBudget budget_;
  KeySpace keys_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::vector<Slot> slots_;
  std::vector<int64_t> slot_of_;        // KeySpace-indexed; -1 = not resident
  std::vector<uint8_t> incoming_;       // KeySpace-indexed: a pending move brings it in
  std::vector<uint8_t> in_window_;      // KeySpace-indexed: used by the current window
  std::vector<ExpertKey> window_keys_;  // the current window's keys, in record order
  std::vector<ExpertKey> window_misses_;
  size_t pending_count_ = 0;
  ExpertStats stats_;
};

}  // namespace strata::experts
