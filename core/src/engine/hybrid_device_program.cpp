// Fast mode's device program: a window's ops as one list (one graph on a GPU) whose flag ops hand each MoE layer's
// routes to the host and wait for its placement; the placer thread, placing the layers in order as their routes come
// out and running the pool; the watcher thread, raising a layer's placed flag once its PCIe copies landed; and every
// flag raised after an error so that the device finishes.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include <sys/prctl.h>

#include "hybrid_step_support.hpp"
#include "strata/error.hpp"
#include "strata/op_builders.hpp"
#include "strata/op_tensor.hpp"

namespace strata {
namespace {

// A table of expert entries as the i32 words COPY moves.
static_assert(sizeof(strata_expert_weights) % sizeof(int32_t) == 0, "entries copy as whole i32 words");
strata_tensor entry_words(const strata_expert_weights* entries, uint32_t n) {
  return tensor_i32(reinterpret_cast<const int32_t*>(entries),
                    {static_cast<int64_t>(n * sizeof(strata_expert_weights) / sizeof(int32_t))});
}

}  // namespace

void HybridMoe::emit_handoff(uint32_t il, uint32_t n_tok, std::vector<strata_op>& ops) const {
  if (pool_) {  // the pool's input rows, beside the routes
    ops.push_back(ops::copy(tensor_f32(act_.xn.data(), {n_embd_, n_tok}), tensor_f32(pool_x_.data(), {n_embd_, n_tok})));
  }
  strata_op signal = new_op(STRATA_OP_SIGNAL);
  signal.dst = tensor_i32(routed_flag(il), {1});
  signal.i[0] = 1;
  if (stamping_) signal.src[1] = make_tensor(stamps_.data() + 2 * il, format::GgmlType::I64, {1});
  ops.push_back(signal);
}

void HybridMoe::emit_takeover(uint32_t il, std::vector<strata_op>& ops) const {
  strata_op wait = new_op(STRATA_OP_WAIT);
  wait.src[0] = tensor_i32(placed_flag(il), {1});
  wait.i[0] = 1;
  if (stamping_) wait.src[1] = make_tensor(stamps_.data() + 2 * il + 1, format::GgmlType::I64, {1});
  ops.push_back(wait);
  const uint32_t n = tables_[il].n_expert;
  ops.push_back(ops::copy(entry_words(host_entries_[il].data(), n), entry_words(device_entries_[il].data(), n)));
}

void HybridMoe::run_program(std::span<const strata_op> ops, uint32_t n_tok) {
  const auto t0 = clock_type::now();
  for (size_t i = 0; i < flags_.size(); ++i) std::atomic_ref<int32_t>(flags_[i]).store(0, std::memory_order_relaxed);
  for (uint32_t il : moe_layers_) watch_[il].store(0, std::memory_order_relaxed);
  if (stamping_) {
    std::fill(stamps_.data(), stamps_.data() + stamps_.size(), 0);
    std::fill(ready_stamps_.begin(), ready_stamps_.end(), 0);
    if (rows_stamped(n_tok)) *const_cast<int64_t*>(ready_stamp_slot(moe_layers_.front(), n_tok)) = 0;
  }
  placer_abort_.store(false);
  placer_failed_.store(false);
  program_n_tok_ = n_tok;
  std::atomic_thread_fence(std::memory_order_release);
  if (!placer_) {
    placer_ = std::make_unique<WindowWorker>(
        [this] {
          try {
            place_program(program_n_tok_);
          } catch (...) {
            placer_failed_.store(true);
            release_program();  // the tables the device reads still hold valid addresses
            throw;
          }
        });  // not pinned: the pool's workers float (cpu_avx2 pins only with pin=true), and a thread pinned to a CPU
             // that another process keeps busy could not move off it
    watcher_ = std::make_unique<WindowWorker>([this] {
      try {
        watch_program();
      } catch (...) {
        release_program();
        throw;
      }
    });
  }
  placer_->start();
  watcher_->start();
  std::exception_ptr failed;
  try {
    queues_.compute_async(ops);
    queues_.record(stage_done_->get(), nullptr);
    // Wait for both; a device that fails meanwhile (done() throws) must not leave them spinning.
    for (;;) {
      if (placer_->wait_for(std::chrono::milliseconds(2)) && watcher_->wait_for(std::chrono::milliseconds(2))) break;
      (void)queues_.done(stage_done_->get());
    }
  } catch (...) {
    failed = std::current_exception();
    placer_abort_.store(true);
    release_program();
  }
  placer_->wait();
  watcher_->wait();
  if (!failed) failed = placer_->error();
  if (!failed) failed = watcher_->error();
  if (failed) {
    try {
      queues_.synchronize(stage_done_->get());
    } catch (const Error&) {
    }
    std::rethrow_exception(failed);
  }
  queues_.synchronize(stage_done_->get());
  const auto t_end = clock_type::now();
  times_.program_s += std::chrono::duration<double>(t_end - t0).count();
  ++times_.programs;
  attribute_program(t0, t_end);
  if (rows_stamped(n_tok)) ready_stamps_[moe_layers_.back()] = *ready_stamp_slot(moe_layers_.back(), n_tok);
  if (balancing_window_) observe_program();
}

void HybridMoe::place_program(uint32_t n_tok) {
  const bool rows_flagged = rows_ready_flag(n_tok);
  const bool stamped = rows_stamped(n_tok);
  uint32_t prev_layer = UINT32_MAX;
  for (uint32_t il : moe_layers_) {
    // The layer's routes: spin on the flag (the device raises them microseconds apart), yielding now and then.
    std::atomic_ref<int32_t> routed(*routed_flag(il));
    for (uint32_t spin = 1; routed.load(std::memory_order_acquire) == 0; ++spin) {
      if (spin % 4096 == 0) {
        if (placer_abort_.load()) throw Error("the device program failed before MoE layer " + std::to_string(il));
        std::this_thread::yield();
      }
    }
    const auto t1 = clock_type::now();
    seen_at_[il] = t1;
    // The previous MoE layer's sums waited on the shared ready flag; its stamp there is final and visible now.
    if (prev_layer != UINT32_MAX && stamped) ready_stamps_[prev_layer] = *ready_stamp_slot(prev_layer, n_tok);
    prev_layer = il;
    // The previous layer's MOE_ROUTED is done (the device raised this layer's flag after it): its rows and their
    // flag are free again, and the flag goes down before this layer's placed flag goes up.
    std::atomic_ref<int32_t> rows_ready(*rows_flag(il, n_tok));
    if (rows_flagged) rows_ready.store(0, std::memory_order_relaxed);
    const experts::LayerPlan plan = plan_layer(il, n_tok);
    if (plan.pcie.empty()) {
      placed_at_[il] = clock_type::now();
      std::atomic_ref<int32_t>(*placed_flag(il)).store(1, std::memory_order_release);
      hand_to_watcher(il, 1);
    } else {
      queues_.record(layer_copies_[il]->get(), copy_stream_->get());
      hand_to_watcher(il, 2);  // the watcher raises placed once they landed
    }
    if (!plan.peer.empty()) peer_->start(il, n_tok, pool_x_.data(), ids_.data(), weights_.data(), plan.peer);
    if (!link_experts_.empty()) {
      link_->start(il, n_tok, model_.weights().layers[il].routing.k, pool_x_.data(), ids_.data(), weights_.data(),
                   link_experts_);
    }
    if (!plan.cpu.empty() || !link_experts_.empty()) x_.assign(pool_x_.data(), pool_x_.data() + size_t{n_embd_} * n_tok);
    if (!plan.cpu.empty()) (void)run_pool(il, n_tok, plan.cpu);  // its time is in times_.pool_s
    if (!plan.peer.empty()) {
      peer_->finish();
      take_peer_rows(plan.peer);
    }
    if (!link_experts_.empty()) finish_link(il, n_tok);
    rows_at_[il] = clock_type::now();
    if (balancing_window_) {
      layer_cpu_[il] = static_cast<uint32_t>(plan.cpu.size());
      layer_pcie_[il] = static_cast<uint32_t>(plan.pcie.size());
    }
    if (rows_flagged) rows_ready.store(1, std::memory_order_release);
    times_.place_s += seconds_since(t1);
  }
}

void HybridMoe::watch_program() {
  // The watcher sleeps: a spinning thread here would take a core from the pool's workers, which are the critical
  // path. It wakes when the placer hands it a layer, then polls the copies' event every few microseconds (a
  // blocking event wait spins inside the driver). The timer slack makes those sleeps as short as asked.
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  for (uint32_t il : moe_layers_) {
    uint8_t state = 0;
    while ((state = watch_[il].load(std::memory_order_acquire)) == 0) watch_[il].wait(0, std::memory_order_acquire);
    if (placer_failed_.load() || placer_abort_.load()) return;  // every flag is raised; the error is reported
    if (state != 2) continue;
    while (!queues_.done(layer_copies_[il]->get())) {
      if (placer_abort_.load()) return;
      std::this_thread::sleep_for(std::chrono::microseconds(8));
    }
    placed_at_[il] = clock_type::now();
    std::atomic_ref<int32_t>(*placed_flag(il)).store(1, std::memory_order_release);
  }
}

void HybridMoe::hand_to_watcher(uint32_t il, uint8_t state) {
  watch_[il].store(state, std::memory_order_release);
  watch_[il].notify_one();
}

void HybridMoe::release_program() {
  for (uint32_t il : moe_layers_) {
    std::atomic_ref<int32_t>(*placed_flag(il)).store(1, std::memory_order_release);
    if (rows_ready_flag(program_n_tok_)) std::atomic_ref<int32_t>(*rows_flag(il, program_n_tok_)).store(1, std::memory_order_release);
    // A watcher asleep on a layer the placer will never hand over wakes and sees the failure.
    uint8_t none = 0;
    if (watch_[il].compare_exchange_strong(none, 1)) watch_[il].notify_one();
  }
}

}  // namespace strata
