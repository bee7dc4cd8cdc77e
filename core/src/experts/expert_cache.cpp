#include "strata/experts/expert_cache.hpp"

#include <algorithm>
#include <string>

#include "strata/error.hpp"

namespace strata::experts {

namespace {

std::string key_text(ExpertKey k) { return "layer " + std::to_string(k.layer) + " expert " + std::to_string(k.expert); }

std::string move_text(const SwapMove& m) {
  return "slot " + std::to_string(m.slot) + " (" + (m.evicted ? key_text(*m.evicted) : std::string("empty")) + " -> " +
         key_text(m.incoming) + ")";
}

}  // namespace

ExpertCache::ExpertCache(ExpertGeometry geometry, SlotBudget budget, std::unique_ptr<EvictionPolicy> policy)
    : geometry_(std::move(geometry)),
      budget_(std::move(budget)),
      keys_(geometry_.key_space()),
      policy_(std::move(policy)),
      stats_(keys_) {
  if (budget_.layer_class.size() != geometry_.layers.size() || budget_.layer_slots.size() != geometry_.layers.size())
    throw Error("expert cache: the slot budget was planned for " + std::to_string(budget_.layer_class.size()) +
                " layers, the model has " + std::to_string(geometry_.layers.size()));
  if (!policy_) throw Error("expert cache: no eviction policy");
  slots_.resize(budget_.total_slots());
  slot_of_.assign(keys_.size(), -1);
  incoming_.assign(keys_.size(), 0);
  in_window_.assign(keys_.size(), 0);
  stats_.slots = n_slots();
}

void ExpertCache::require_no_pending(const char* what) const {
  if (pending_count_ > 0)
    throw Error(std::string("expert cache: ") + what + " while " + std::to_string(pending_count_) +
                " swaps are pending: commit or abort them first");
}

void ExpertCache::clear() {
  for (Slot& s : slots_) s = Slot{};
  std::fill(slot_of_.begin(), slot_of_.end(), -1);
  std::fill(incoming_.begin(), incoming_.end(), 0);
}

void ExpertCache::place(uint32_t slot, ExpertKey key) {
  slots_[slot].key = key;
  slot_of_[keys_.index(key)] = slot;
}

void ExpertCache::fill_uniform() {
  require_no_pending("fill_uniform");
  clear();
  for (const SlotClass& c : budget_.classes) {
    uint32_t next = c.first_slot;
    for (uint32_t layer : c.layers)
      for (uint32_t e = 0; e < budget_.layer_slots[layer]; ++e) place(next++, {layer, e});
  }
}

void ExpertCache::fill_from_profile(const ExpertProfile& profile) {
  require_no_pending("fill_from_profile");
  const std::vector<ExpertKey> rank = profile.key_space() == keys_ ? profile.rank() : std::vector<ExpertKey>{};
  fill_keys(rank, &profile);  // a profile of another shape is refused there, by name
}

void ExpertCache::fill_keys(std::span<const ExpertKey> keys, const ExpertProfile* seed) {
  require_no_pending("fill_keys");
  if (seed != nullptr && !(seed->key_space() == keys_))
    throw Error("expert cache: the profile is of " + std::to_string(seed->identity().n_layer) + " layers x " +
                std::to_string(seed->identity().n_expert) + " experts; the model has " + std::to_string(keys_.n_layer) +
                " x " + std::to_string(keys_.n_expert));
  clear();
  std::vector<std::vector<ExpertKey>> chosen(budget_.classes.size());
  std::vector<uint8_t> taken(keys_.size(), 0);
  for (ExpertKey key : keys) {
    if (!geometry_.has(key) || taken[keys_.index(key)] != 0) continue;
    std::vector<ExpertKey>& c = chosen[budget_.layer_class[key.layer]];
    if (c.size() < budget_.classes[budget_.layer_class[key.layer]].n_slots) {
      c.push_back(key);
      taken[keys_.index(key)] = 1;
    }
  }
  for (size_t c = 0; c < chosen.size(); ++c) {
    std::sort(chosen[c].begin(), chosen[c].end());
    uint32_t next = budget_.classes[c].first_slot;
    for (ExpertKey key : chosen[c]) place(next++, key);
  }
  if (seed == nullptr) return;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const ExpertKey key = keys_.key(i);
    if (geometry_.has(key)) policy_->seed(key, seed->rate(key));
  }
}

std::optional<uint32_t> ExpertCache::slot_of(ExpertKey key) const {
  if (key.layer >= keys_.n_layer || key.expert >= keys_.n_expert) return std::nullopt;
  const int64_t s = slot_of_[keys_.index(key)];
  if (s < 0) return std::nullopt;
  return static_cast<uint32_t>(s);
}

std::optional<uint32_t> ExpertCache::usable_slot(ExpertKey key) const {
  const std::optional<uint32_t> s = slot_of(key);
  if (!s || slots_[*s].move) return std::nullopt;
  return s;
}

std::optional<ExpertKey> ExpertCache::content(uint32_t slot) const {
  if (slot >= slots_.size())
    throw Error("expert cache: slot " + std::to_string(slot) + " of " + std::to_string(slots_.size()));
  return slots_[slot].key;
}

bool ExpertCache::pending(uint32_t slot) const {
  if (slot >= slots_.size())
    throw Error("expert cache: slot " + std::to_string(slot) + " of " + std::to_string(slots_.size()));
  return slots_[slot].move.has_value();
}

void ExpertCache::begin_window(uint32_t positions) {
  for (ExpertKey k : window_keys_) in_window_[keys_.index(k)] = 0;
  window_keys_.clear();
  window_misses_.clear();
  policy_->next_window();
  ++stats_.windows;
  stats_.positions += positions;
}

void ExpertCache::record(uint32_t layer, std::span<const ExpertUse> uses) {
  if (layer >= geometry_.n_layer() || geometry_.layers[layer].n_expert == 0)
    throw Error("expert cache: layer " + std::to_string(layer) + " has no routed experts");
  // Checked before anything is counted, so a bad list leaves the cache as it was.
  std::vector<uint32_t> ids;
  ids.reserve(uses.size());
  for (const ExpertUse& u : uses) {
    if (u.expert >= geometry_.layers[layer].n_expert)
      throw Error("expert cache: " + key_text({layer, u.expert}) + " is past the layer's " +
                  std::to_string(geometry_.layers[layer].n_expert) + " experts");
    if (in_window_[keys_.index({layer, u.expert})])
      throw Error("expert cache: " + key_text({layer, u.expert}) + " was already recorded in this window");
    ids.push_back(u.expert);
  }
  std::sort(ids.begin(), ids.end());
  if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end())
    throw Error("expert cache: " + key_text({layer, *dup}) + " is listed twice in one layer's uses");

  for (const ExpertUse& u : uses) {
    const ExpertKey key{layer, u.expert};
    const bool hit = usable_slot(key).has_value();
    stats_.layers[layer].add(hit, u.tokens);
    stats_.experts[keys_.index(key)].add(hit, u.tokens);
    policy_->use(key, u.tokens);
    in_window_[keys_.index(key)] = 1;
    window_keys_.push_back(key);
    if (!hit) window_misses_.push_back(key);
  }
}

std::vector<SwapMove> ExpertCache::plan_swaps(uint32_t max_moves) {
  std::vector<SwapMove> moves;
  if (max_moves == 0) return moves;

  struct Ranked {
    double heat;
    ExpertKey key;
  };
  std::vector<Ranked> candidates;
  for (ExpertKey k : window_misses_) {
    const size_t i = keys_.index(k);
    // Still resident (its slot is being rewritten) or already on its way in: nothing to move.
    if (slot_of_[i] >= 0 || incoming_[i]) continue;
    candidates.push_back({policy_->heat(k), k});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Ranked& a, const Ranked& b) { return a.heat != b.heat ? a.heat > b.heat : a.key < b.key; });

  // Per class, the slots that may be overwritten, coldest first: empty ones (by index), then by heat and key.
  std::vector<std::vector<uint32_t>> victims(budget_.classes.size());
  std::vector<bool> victims_built(budget_.classes.size(), false);
  std::vector<size_t> next_victim(budget_.classes.size(), 0);
  const auto build_victims = [&](uint32_t c) {
    std::vector<uint32_t>& v = victims[c];
    const SlotClass& cls = budget_.classes[c];
    for (uint32_t s = cls.first_slot; s < cls.first_slot + cls.n_slots; ++s) {
      const Slot& slot = slots_[s];
      if (slot.move || (slot.key && in_window_[keys_.index(*slot.key)])) continue;
      v.push_back(s);
    }
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      const std::optional<ExpertKey>& ka = slots_[a].key;
      const std::optional<ExpertKey>& kb = slots_[b].key;
      if (!ka || !kb) return !ka && kb;
      const double ha = policy_->heat(*ka), hb = policy_->heat(*kb);
      return ha != hb ? ha < hb : *ka < *kb;
    });
    victims_built[c] = true;
  };

  for (const Ranked& cand : candidates) {
    if (moves.size() >= max_moves) break;
    const uint32_t c = budget_.layer_class[cand.key.layer];
    if (c >= budget_.classes.size() || budget_.classes[c].n_slots == 0) continue;
    if (!victims_built[c]) build_victims(c);
    if (next_victim[c] >= victims[c].size()) continue;
    const uint32_t s = victims[c][next_victim[c]];
    // Only a hotter expert replaces a resident one: equal heat would swap back and forth.
    if (slots_[s].key && !(cand.heat > policy_->heat(*slots_[s].key))) continue;
    ++next_victim[c];
    const SwapMove m{s, slots_[s].key, cand.key};
    slots_[s].move = m;
    incoming_[keys_.index(cand.key)] = 1;
    ++pending_count_;
    moves.push_back(m);
  }
  return moves;
}

const SwapMove& ExpertCache::pending_move(const SwapMove& move) const {
  if (move.slot >= slots_.size() || !slots_[move.slot].move || !(*slots_[move.slot].move == move))
    throw Error("expert cache: " + move_text(move) + " is not a pending move of this cache");
  return *slots_[move.slot].move;
}

void ExpertCache::commit(const SwapMove& move) {
  pending_move(move);
  Slot& slot = slots_[move.slot];
  if (slot.key) slot_of_[keys_.index(*slot.key)] = -1;
  place(move.slot, move.incoming);
  incoming_[keys_.index(move.incoming)] = 0;
  slot.move.reset();
  --pending_count_;
  ++stats_.swaps;
}

void ExpertCache::abort(const SwapMove& move, AbortedCopy how) {
  pending_move(move);
  Slot& slot = slots_[move.slot];
  if (how == AbortedCopy::Partial && slot.key) {
    slot_of_[keys_.index(*slot.key)] = -1;
    slot.key.reset();
  }
  incoming_[keys_.index(move.incoming)] = 0;
  slot.move.reset();
  --pending_count_;
  ++stats_.aborted_swaps;
}

void ExpertCache::reset_stats() {
  stats_ = ExpertStats(keys_);
  stats_.slots = n_slots();
}

}  // namespace strata::experts
