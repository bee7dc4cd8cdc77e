// The peer card (runtime.peer_device): a second device of the engine's backend that holds a share of the cached
// experts and computes their weighted rows for this engine's card.
//
// The ranked experts are dealt between the two cards by experts.peer_hot (expert_deal.hpp), so an expert sits on one
// card only, and the planner's PEER class names a layer's experts the peer holds. For such a layer, start() hands the
// peer the window's normed rows and the router's ids and weights through mapped pinned host memory; the peer's
// MOE_ROUTED, in rows-out mode over a table of its own experts alone (every other entry NULL), writes each of their
// (token, expert) rows to column t x k + j of mapped host memory; finish() waits for it. This engine's card takes
// those rows as MOE_ROUTED's src3 (entries with a NULL gate), as it takes the CPU pool's, so each token's sum keeps
// ascending expert id and every byte is the one-card engine's: the peer runs the same canonical kernels.
//
// Activations and rows cross through host memory on every machine: NVLink peer copies are not used. A decode
// token's traffic is one normed row in and k rows out (n_embd floats each), so the link's latency, not its
// bandwidth, is what the peer adds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rows_out_buffers.hpp"
#include "slot_buffers.hpp"
#include "strata/backend.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/experts/expert_cache.hpp"
#include "strata/experts/planner.hpp"
#include "strata/model.hpp"

namespace strata {

struct PeerTimes {
  double busy_s = 0;        // the peer's MOE_ROUTED ops on its own clock (TIMESTAMP ops around them)
  double round_trip_s = 0;  // the host's view: from start() to finish() returning
  uint64_t layers = 0;      // layers the peer computed experts of
  uint64_t experts = 0;     // experts it computed (each layer's distinct experts, summed)
  uint64_t pairs = 0;       // (token, expert) rows it returned
};

// As a residency view (the planner's PEER tier): the peer cache's usable experts while attached, none while
// detached (PEER_DETACH), so that the planner then tries the next tier (the peer link) before PCIe and the pool.
class PeerTier final : public experts::ResidencyView {
 public:
  // `backend` is the peer device: a GPU backend with memory and queues (strata::Error otherwise). Its inputs and
  // rows are sized for windows of up to max_tokens. `own_name` is this engine's device, for the description.
  PeerTier(Backend& backend, const Model& model, const experts::ExpertArena& arena, uint32_t max_tokens);
  ~PeerTier();

  // The room for the peer's slots now: its free memory, less a margin.
  experts::DeviceRoom room() const;
  // Takes the peer's cache (make_dealt_caches), allocates its slots and copies its experts in from the arena; waits.
  void set_cache(std::unique_ptr<experts::ExpertCache> cache);
  const experts::ExpertCache& cache() const { return *cache_; }
  std::optional<uint32_t> usable_slot(experts::ExpertKey key) const override {
    return attached_ ? cache_->usable_slot(key) : std::nullopt;
  }
  // PEER_DETACH: the peer's slots are given back to its device (the cache keeps its residents, unused);
  // PEER_ATTACH: they are allocated and filled from the arena again (waits). Each returns what it did.
  std::string release();
  std::string restore();
  bool attached() const { return attached_; }
  // Whether the peer device runs the rows-out MOE_ROUTED of every MoE layer for a window of n_tok tokens.
  bool runs(uint32_t n_tok) const;

  // Starts layer il's `experts` (the plan's PEER entries, device 1) for a window of n_tok tokens: x [n_embd, n_tok],
  // ids and weights [k, n_tok] as the router gave them. The peer computes while the caller goes on.
  void start(uint32_t il, uint32_t n_tok, const float* x, const int32_t* ids, const float* weights,
             std::span<const experts::PlannedExpert> experts);
  // Waits for the started layer: rows() then holds its pairs' rows.
  void finish();
  // [n_embd, k x max_tokens], mapped: column t x k + j holds the row of token t's pair j when the peer computed it.
  const float* rows() const { return work_.rows(); }
  // The rows as MOE_ROUTED's src3 for a window of n_tok tokens (memory every device of the backend addresses).
  strata_tensor rows_tensor(uint32_t n_tok, uint32_t k) const { return work_.rows_tensor(n_tok, k); }

  const PeerTimes& times() const { return times_; }
  void reset_counts() { times_ = PeerTimes{}; }
  // "NVIDIA H200 (cuda device 0): 96 slots (...); activations and rows through mapped host memory"
  const std::string& describe() const { return description_; }

 private:
  // Allocates the slots of the cache's budget and copies its residents in from the arena; waits. Returns seconds.
  double fill_slots();

  Backend& backend_;
  DeviceMemory& mem_;
  DeviceQueues& queues_;
  const Model& model_;
  const experts::ExpertArena& arena_;
  std::unique_ptr<experts::ExpertCache> cache_;
  SlotBuffers slots_;
  RowsOutBuffers work_;     // the window's inputs, the rows and the tables of the peer's experts
  Buffer<int64_t> stamps_;  // mapped: the peer's clock before and after its op
  bool stamping_ = false;
  std::unique_ptr<DeviceEvent> done_;
  std::unique_ptr<DeviceStream> fill_stream_;
  bool started_ = false;
  bool attached_ = true;
  std::chrono::steady_clock::time_point started_at_;
  PeerTimes times_;
  std::string description_;
};

}  // namespace strata
