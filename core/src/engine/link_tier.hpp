// The other engine's card, through the peer link (a `link` plugin: peerlink). Two engine processes, one card each,
// share one host arena; each publishes which experts its card holds, and each may ask the other for the weighted
// rows of experts the other holds and it does not. The other's service thread (link_service.hpp) computes them on
// its card with the same canonical kernels, so the rows are the bytes this card would have computed.
//
// LinkTier is the requester's side: a residency view for the planner (the other's published residency, read once a
// window, and only for windows the link may serve), and one request per MoE layer: start() hands the layer's rows,
// ids and weights to the link, finish() waits for the answer until the link's deadline. An expert the other no
// longer held when the request came (it swapped it out meanwhile), or every expert of a request that was not
// answered in time, is computed by the caller from this engine's RAM copy and counted as late. A request that
// times out, or a peer that died, leaves the link unused until the other has caught up (the plugin says so), and
// this engine says so once.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/experts/planner.hpp"
#include "strata/experts/residency_view.hpp"
#include "strata/model.hpp"
#include "strata/plugin_api.h"

namespace strata {

class PluginInstance;

struct LinkCounts {
  uint64_t requests = 0;   // layers asked
  uint64_t experts = 0;    // experts the other computed
  uint64_t pairs = 0;      // (token, expert) rows it returned
  uint64_t late = 0;       // experts computed here instead: not held any more, or not answered in time
  uint64_t timeouts = 0;   // requests not answered by the deadline (or the other died first)
  double wait_s = 0;       // from start() to finish() returning
};

class LinkTier final : public experts::ResidencyView {
 public:
  // Opens the link (the plugin's file and role) for `model`: throws strata::Error with the plugin's reason.
  LinkTier(PluginInstance& plugin, const Model& model, uint32_t max_tokens, const std::string& fingerprint);

  // The planner's view: the other card's experts, in windows begin_window() enabled.
  std::optional<uint32_t> usable_slot(experts::ExpertKey key) const override;
  // Enables the view for a window the caller can take link rows in (`usable`), when the other engine is ready;
  // reads its residency then. Returns whether the window uses the link.
  bool begin_window(bool usable);

  // Publishes this card's residency: has(layer, expert) for every expert of the model.
  template <class Has>
  void publish(const Has& has) {
    std::fill(own_bits_.begin(), own_bits_.end(), uint8_t{0});
    for (uint32_t il = 0; il < n_layer_; ++il) {
      for (uint32_t e = 0; e < n_expert_; ++e) {
        if (has(il, e)) own_bits_[(size_t{il} * n_expert_ + e) / 8] |= static_cast<uint8_t>(1u << (e % 8));
      }
    }
    publish_bits();
  }
  void set_serving(bool on);
  bool serving() const { return serving_; }

  // Sends layer il's request for `experts` (ascending): x [n_embd, n_tok], ids and weights [k, n_tok].
  void start(uint32_t il, uint32_t n_tok, uint32_t k, const float* x, const int32_t* ids, const float* weights,
             std::span<const experts::PlannedExpert> experts);
  // Waits for the answer. Returns the started experts the other did not compute (not held any more, or every one
  // when the answer did not come in time): the caller computes them. rows() holds the others' rows.
  const std::vector<experts::PlannedExpert>& finish();
  // [n_embd, k x n_tok] of the last request: column t x k + j holds token t's pair j for a served expert.
  const float* rows() const { return request_.rows; }

  const strata_link_v1& table() const { return *link_; }
  void* ctx() const { return ctx_; }
  const LinkCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = LinkCounts{}; }
  std::string describe() const;

 private:
  void publish_bits();

  const strata_link_v1* link_ = nullptr;
  void* ctx_ = nullptr;
  std::string plugin_name_;
  uint32_t n_layer_ = 0, n_expert_ = 0, n_embd_ = 0;
  std::vector<uint8_t> own_bits_, peer_bits_;
  bool window_on_ = false;
  bool serving_ = false;
  bool said_lost_ = false;
  strata_link_request request_{};
  std::vector<experts::PlannedExpert> started_, late_;
  std::chrono::steady_clock::time_point started_at_;
  LinkCounts counts_;
};

}  // namespace strata
