// Simple mode's host step: a stage run and waited for (the pool's input rows copied beside it), then the layer
// placed: its plan, its table copied in, the compute stream behind the PCIe copies, and the rows made elsewhere (the
// pool's, the peer card's, the other engine's) while the copies fly.
#include "hybrid_moe.hpp"

#include "hybrid_step_support.hpp"

namespace strata {

void HybridMoe::run_stage(std::span<const strata_op> ops, uint32_t n_tok) {
  const auto t0 = clock_type::now();
  queues_.compute_async(ops);
  pool_x_ready_ = n_tok <= pool_max_tokens_;
  if (pool_x_ready_) {
    queues_.copy_async(pool_x_.data(), act_.xn.data(), size_t{n_embd_} * n_tok * sizeof(float),
                       STRATA_COPY_DEVICE_TO_HOST, nullptr);
  }
  queues_.record(stage_done_->get(), nullptr);
  queues_.synchronize(stage_done_->get());
  times_.stage_s += seconds_since(t0);
}

void HybridMoe::place(uint32_t il, uint32_t n_tok) {
  const auto t0 = clock_type::now();
  const experts::LayerPlan plan = plan_layer(il, n_tok, !chunk_window_);
  const bool chunked = chunk_window_ && !plan.pcie.empty();
  if (chunked) place_chunked(il, n_tok, plan);
  // The pool's input rows: copied with the stage (run_stage), or read now, before anything is queued behind the
  // copies.
  const bool x_ready = pool_x_ready_;
  pool_x_ready_ = false;
  if (!plan.cpu.empty() || !plan.peer.empty() || !link_experts_.empty()) {
    if (x_ready) {
      x_.assign(pool_x_.data(), pool_x_.data() + size_t{n_embd_} * n_tok);
    } else {
      read_back(mem_, act_.xn, size_t{n_embd_} * n_tok, x_);
    }
  }
  // The peer computes its experts while the copies fly and the pool runs.
  if (!plan.peer.empty()) peer_->start(il, n_tok, x_.data(), ids_.data(), weights_.data(), plan.peer);
  if (!link_experts_.empty()) {
    link_->start(il, n_tok, model_.weights().layers[il].routing.k, x_.data(), ids_.data(), weights_.data(), link_experts_);
  }
  const uint32_t n_expert = tables_[il].n_expert;
  queues_.copy_async(device_entries_[il].data(), host_entries_[il].data(), size_t{n_expert} * sizeof(strata_expert_weights),
                     STRATA_COPY_HOST_TO_DEVICE, nullptr);
  if (!plan.pcie.empty() && !chunked) {
    queues_.record(copies_done_->get(), copy_stream_->get());
    queues_.wait(nullptr, copies_done_->get());
  }
  if (!plan.cpu.empty()) run_pool(il, n_tok, plan.cpu);
  if (!plan.peer.empty()) {
    peer_->finish();
    if (n_tok <= pool_max_tokens_) take_peer_rows(plan.peer);  // else src3 is the peer's rows themselves
  }
  if (!link_experts_.empty()) finish_link(il, n_tok);
  times_.place_s += seconds_since(t0);
}

}  // namespace strata
