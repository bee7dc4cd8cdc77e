// The layer planner both modes share: a MoE layer's routes read and grouped by expert, recorded in the cache, planned
// (HIT, PEER on the peer card or the other engine, PCIe, the CPU pool), moved to PCIe where the window's rows have no
// way back, counted, and written into the layer's mapped expert table, with the PCIe copies enqueued.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <string>

#include "hybrid_step_support.hpp"
#include "strata/error.hpp"

namespace strata {

experts::LayerPlan HybridMoe::plan_layer(uint32_t il, uint32_t n_tok, bool stage_copies) {
  const auto t0 = clock_type::now();
  const LayerWeights& lw = model_.weights().layers[il];
  const uint32_t k = lw.routing.k, n_expert = lw.routing.n_expert;
  const size_t n_pairs = size_t{k} * n_tok;
  read_back(mem_, act_.expert_ids, n_pairs, ids_);
  read_back(mem_, act_.expert_weights, n_pairs, weights_);

  // The window's routes grouped by expert (ascending ids, each expert's pairs in window order): the distinct
  // experts and their tokens for the plan, and the pool's pair lists.
  if (auto why = format::group_routes(ids_.data(), weights_.data(), k, n_tok, n_expert, routes_)) {
    throw Error("layer " + std::to_string(il) + ": " + *why);
  }
  uses_.clear();
  for (size_t i = 0; i < routes_.expert_ids.size(); ++i) {
    uses_.push_back({routes_.expert_ids[i], routes_.token_offsets[i + 1] - routes_.token_offsets[i]});
  }
  cache_->record(il, uses_);
  experts::LayerPlan plan = planner_->plan(il, uses_);
  // The other engine's experts (the link's view is dark outside link windows, so there are none then).
  link_experts_.clear();
  if (link_ != nullptr) {
    const auto other = std::stable_partition(plan.peer.begin(), plan.peer.end(),
                                             [this](const experts::PlannedExpert& p) { return p.device != link_device_; });
    link_experts_.assign(other, plan.peer.end());
    plan.peer.erase(other, plan.peer.end());
  }
  // A window longer than decode's reads its misses over PCIe and computes them on the GPU; a window whose rows have
  // no way back from the peer reads the peer's experts over PCIe too.
  const bool cpu_to_pcie = !plan.cpu.empty() && n_tok > pool_max_tokens_;
  const bool peer_to_pcie = !plan.peer.empty() && !peer_window_;
  if (cpu_to_pcie || peer_to_pcie) {
    if (cpu_to_pcie) plan.pcie.insert(plan.pcie.end(), plan.cpu.begin(), plan.cpu.end());
    if (peer_to_pcie) {
      for (const experts::PlannedExpert& p : plan.peer) plan.pcie.push_back({p.expert, p.tokens, 0, 0});
    }
    std::sort(plan.pcie.begin(), plan.pcie.end(),
              [](const experts::PlannedExpert& a, const experts::PlannedExpert& b) { return a.expert < b.expert; });
    if (cpu_to_pcie) plan.cpu.clear();
    if (peer_to_pcie) plan.peer.clear();
  }
  // PEER counts both other cards: the peer tier's and the link's.
  const size_t n_peer = plan.peer.size();
  plan.peer.insert(plan.peer.end(), link_experts_.begin(), link_experts_.end());
  counters_.add(plan, cache_->geometry());
  plan.peer.resize(n_peer);

  const experts::ExpertLayout& layout = arena_->layout(il);
  strata_expert_weights* entries = host_entries_[il].data();
  for (const experts::PlannedExpert& h : plan.hit) entries[h.expert] = layout.at(slot_address(h.slot));
  if (stage_copies && !plan.pcie.empty()) {
    upload_targets_.clear();
    uint32_t next = 0;
    for (const experts::PlannedExpert& p : plan.pcie) {
      unsigned char* dst = staging_.data() + uint64_t{next++} * staging_bytes_;
      entries[p.expert] = layout.at(dst);
      upload_targets_.push_back({dst, p.expert});
    }
    upload_->copy_experts(upload_targets_, il, copy_stream_->get());  // one batch: the pool starts after it
  }
  times_.copies += plan.pcie.size();
  // The pool's and the peer's experts: computed elsewhere, their rows come in through src3.
  const strata_expert_weights elsewhere{nullptr, nullptr, nullptr, layout.gate_type, layout.up_type, layout.down_type, 0};
  for (const experts::PlannedExpert& c : plan.cpu) entries[c.expert] = elsewhere;
  for (const experts::PlannedExpert& p : plan.peer) entries[p.expert] = elsewhere;
  for (const experts::PlannedExpert& p : link_experts_) entries[p.expert] = elsewhere;
  times_.plan_s += seconds_since(t0);
  ++times_.layers;
  return plan;
}

std::pair<uint32_t, uint32_t> HybridMoe::pairs_of(uint32_t expert) const {
  const auto at = std::lower_bound(routes_.expert_ids.begin(), routes_.expert_ids.end(), expert);
  if (at == routes_.expert_ids.end() || *at != expert) {
    throw Error("internal: expert " + std::to_string(expert) + " is planned but not routed");
  }
  const size_t i = static_cast<size_t>(at - routes_.expert_ids.begin());
  return {routes_.token_offsets[i], routes_.token_offsets[i + 1]};
}

}  // namespace strata
