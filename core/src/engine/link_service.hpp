// The service side of the peer link (link_tier.hpp): a thread that answers the other engine's requests with this
// card's experts. It runs on a second instance of the engine's backend on the same card (its own streams, so it
// neither waits behind nor blocks the engine's own queue), reads the owner's slots, and computes each request with
// MOE_ROUTED in rows-out mode over a table of the experts asked for that this card holds: the kernels and the
// activations the requester's own card would have used, so its rows are those bytes.
//
// Only the owner writes its card: the service holds the owner's card lock while it builds its table and computes,
// and the owner holds it while it rewrites slots (adaptive swaps), then publishes its residency again. An expert the
// request names that the card no longer holds is answered as not served, and the requester computes it itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/backend.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/model.hpp"
#include "link_tier.hpp"
#include "rows_out_buffers.hpp"

namespace strata {

struct ServiceCounts {
  uint64_t requests = 0;    // requests answered
  uint64_t experts = 0;     // experts computed for the other engine
  uint64_t not_held = 0;    // experts asked for that this card did not hold any more
  uint64_t refused = 0;     // malformed requests (answered with nothing served)
  double busy_s = 0;        // from a request seen to its answer
};

class LinkService {
 public:
  // The address of (layer, expert)'s bytes in this card's slots, or nullptr; called with the card lock held.
  using SlotAddress = std::function<const void*(uint32_t layer, uint32_t expert)>;
  LinkService(LinkTier& link, Backend& device, const Model& model, const experts::ExpertArena& arena,
              uint32_t max_tokens, std::mutex& card_lock, SlotAddress slot_address);
  ~LinkService();
  LinkService(const LinkService&) = delete;
  LinkService& operator=(const LinkService&) = delete;

  // LINK_SERVE 1 / 0: the thread runs (and the link says this engine serves) or not.
  void set_serving(bool on);
  bool serving() const { return thread_.joinable(); }
  ServiceCounts counts() const;
  void reset_counts();

 private:
  void run();
  void serve(const strata_link_request& r);

  LinkTier& link_;
  Backend& device_;
  DeviceMemory& mem_;
  DeviceQueues& queues_;
  const Model& model_;
  const experts::ExpertArena& arena_;
  uint32_t n_embd_ = 0;
  std::mutex& card_lock_;
  SlotAddress slot_address_;
  RowsOutBuffers work_;  // the request's inputs, its rows and the tables of the experts asked for
  std::unique_ptr<DeviceEvent> done_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex counts_mutex_;
  ServiceCounts counts_;
};

}  // namespace strata
