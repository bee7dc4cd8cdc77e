// A window's frame: which ways its layers take (one device program, the prompt path's chunks, the peer card, the
// link, the balancer), a request's own PCIe share, and after the window the adaptive swaps, each slot committed once
// its copy landed and the new residency published to the link.
#include "hybrid_moe.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "hybrid_step_support.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"

namespace strata {

void HybridMoe::begin_window(uint32_t n_tok, bool program_allowed) {
  cache_->begin_window(n_tok);
  counters_.add_window(n_tok);
  program_window_ = program_ && program_allowed && (n_tok > pool_max_tokens_ || flagged_rows_supported(n_tok));
  balancing_window_ = balancer_ && !request_frac_ && one_program(n_tok) && n_tok == 1 && n_tok <= pool_max_tokens_;
  chunk_window_ = chunkable_ && n_tok > pool_max_tokens_ && !one_program(n_tok) && chunks_supported(n_tok);
  // The peer's rows need a way in: the pool's rows (decode windows; in a program, behind their ready flag), or, in
  // simple mode, the peer's own rows buffer as src3 (the chunked prompt path has src3 for its chunks).
  peer_window_ = peer_ != nullptr && peer_->attached() &&
                 (n_tok <= pool_max_tokens_ || (!one_program(n_tok) && !chunk_window_ && n_tok <= max_tokens_));
  // The link serves decode windows (its rows come in with the pool's, and the pool computes what comes late).
  link_window_ = link_ != nullptr && link_->begin_window(pool_ && n_tok <= pool_max_tokens_);
  // The pool's roofline is per token of the windows it serves (decode windows): prompts do not dilute it.
  if (pool_ && n_tok <= pool_max_tokens_) times_.pool.tokens += n_tok;
  window_start_ = clock_type::now();
}

bool HybridMoe::flagged_rows_supported(uint32_t n_tok) {
  if (!supports_ || n_tok == 0 || n_tok > kPoolMaxTokens) return true;
  int8_t& known = flagged_supported_[n_tok];
  if (known < 0) {
    known = 1;
    for (uint32_t il : moe_layers_) {
      const uint32_t k = model_.weights().layers[il].routing.k;
      strata_op op = act_.moe_routed(n_embd_, k, n_tok, &tables_[il]);
      op.src[3] = precomputed_rows(n_tok, k);
      op.i[0] = 1;
      op.i[3] = stamping_ ? 1 : 0;
      if (!supports_(op)) {
        known = 0;
        log::info("hybrid path: the device takes no MOE_ROUTED with the pool's rows behind a ready flag for windows of " +
                  std::to_string(n_tok) + " tokens (layer " + std::to_string(il) +
                  "'s expert types): those windows run in simple mode");
        break;
      }
    }
  }
  return known == 1;
}

void HybridMoe::set_request_pcie_frac(std::optional<double> frac) {
  request_frac_ = frac.has_value();
  planner_->set_pcie_frac(frac.value_or(launch_frac_));
}

void HybridMoe::end_window() {
  times_.window_s += seconds_since(window_start_);
  if (adapt_swaps_ <= 0) return;
  // The service reads the cache and the slots under the card lock. Once the moves are planned, their slots' experts
  // are not usable (the service answers them as not held, and the link hears so at once); the new residency is
  // published after the copies landed.
  std::unique_lock<std::mutex> card(card_lock_, std::defer_lock);
  if (link_ != nullptr) card.lock();
  const std::vector<experts::SwapMove> moves = cache_->plan_swaps(static_cast<uint32_t>(adapt_swaps_));
  if (moves.empty()) return;
  if (link_ != nullptr) publish_residency();
  for (const experts::SwapMove& m : moves) {
    upload_->copy(const_cast<void*>(slot_address(m.slot)), m.incoming.layer, m.incoming.expert, copy_stream_->get());
  }
  queues_.record(copies_done_->get(), copy_stream_->get());
  try {
    queues_.synchronize(copies_done_->get());
  } catch (const Error&) {
    for (const experts::SwapMove& m : moves) cache_->abort(m, experts::AbortedCopy::Partial);
    throw;
  }
  for (const experts::SwapMove& m : moves) cache_->commit(m);
  times_.swaps += moves.size();
  if (link_ != nullptr) publish_residency();
}

void HybridMoe::publish_residency() {
  link_->publish([this](uint32_t il, uint32_t e) { return il < tables_.size() && e < tables_[il].n_expert && cache_->usable_slot({il, e}).has_value(); });
}

}  // namespace strata
