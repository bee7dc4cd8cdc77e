// The hybrid MoE path (simple mode): the dense weights and a cache of experts in VRAM; each MoE layer's host step
// (ExpertPlacement::place, after the layer's ROUTER) reads the router's choices, plans each chosen expert as a
// cache HIT, a PCIe read or a CPU pool computation, copies the PCIe experts from the host arena into staging slots
// on a copy stream (the compute stream waits for them with an event), runs the pool on the CPU experts while the
// copies fly, and writes the layer's expert table: slot addresses for HIT and PCIe experts, NULL for the pool's,
// whose weighted rows MOE_ROUTED then reads from mapped host memory (its src3). The sum of each token's rows keeps
// ascending expert id, so every byte equals the all-GPU result whatever the split.
//
// Simple mode synchronizes the host with the device once per MoE layer (the engine runs a stage, then its host
// step). Fast mode (runtime.graphs, on a backend with COPY, SIGNAL and WAIT, for windows the pool may serve) runs
// the window as one op list, which a GPU backend replays as one graph: after each ROUTER the device copies the
// normed rows to mapped memory and raises the layer's "routed" flag; the engine's thread, spinning on the flags in
// order, places the layer exactly as simple mode does (same plan, same table, same pool rows), waits for its PCIe
// copies and raises "placed"; the device, waiting on that flag, copies the table in and runs MOE_ROUTED. No host
// synchronization happens inside the step, and the bytes are simple mode's. The placing runs on a thread of its own
// (the placer): enqueueing the program can itself wait for the device (a full launch queue, scratch memory that
// grows on a first run), and the device waits for the placer.
// Adaptive swaps run between windows, on the copy stream, and a slot changes hands only after its copy is done.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "strata/config.hpp"
#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/experts/expert_cache.hpp"
#include "strata/experts/plan_counters.hpp"
#include "strata/experts/planner.hpp"
#include "strata/format/expert_routes.hpp"
#include "strata/model.hpp"

namespace strata {

// The CPU pool of a backend plugin that provides the expert_pool family (cpu_avx2).
struct ExpertPoolRef {
  const strata_expert_pool_v1* table = nullptr;
  void* ctx = nullptr;
  std::string name;
  explicit operator bool() const { return table != nullptr; }
};

// What the hybrid path measured and did, for the decode summary.
struct HybridTimes {
  double stage_s = 0;    // simple mode: the placement stages' ops on the device, waited for (the GPU's share)
  double program_s = 0;  // fast mode: whole windows run as one program, from enqueue to done
  uint64_t programs = 0; // windows run as one program
  double place_s = 0;    // host steps in all (planning, copies enqueued, pool)
  double pool_s = 0;     // the pool's compute calls
  uint64_t pool_layers = 0;
  uint64_t copies = 0;   // experts read over PCIe
  uint64_t swaps = 0;    // adaptive swaps committed
};

class HybridMoe final : public ExpertPlacement {
 public:
  // Places the dense-weights engine's experts: the host arena (registered with the device, or pageable with a
  // warning), the cache's slots (budget from experts.cache and the device's free memory now), the staging slots for
  // windows of up to max_tokens, and the first residents. `act` must outlive this. Throws strata::Error with the key
  // to change when the budget does not fit.
  // `program`: fast mode is wanted (runtime.graphs) and the backend runs COPY, SIGNAL and WAIT.
  HybridMoe(const Model& model, Activations& act, DeviceMemory& mem, DeviceQueues& queues,
            const config::ExpertsConfig& experts, ExpertPoolRef pool, uint32_t max_tokens, unsigned threads,
            bool program);
  ~HybridMoe() override;

  // `program_allowed`: the window may run as one program (not while ops are profiled one by one).
  void begin_window(uint32_t n_tok, bool program_allowed = true);
  // Fast mode: runs a window built with one_program(n_tok) (a single op list) while placing its layers in order;
  // returns when the device has finished it. On an error the device is released (every flag raised) and waited
  // for before the error is thrown.
  void run_program(std::span<const strata_op> ops, uint32_t n_tok);
  // Runs a stage that ends in a placement: its ops, then (for a window the pool may serve) the copy of its normed
  // rows into pinned memory, with one wait for both, so the pool's input needs no download of its own.
  void run_stage(std::span<const strata_op> ops, uint32_t n_tok);
  // Adaptive swaps (experts.adapt_swaps) after a window, committed once their copies landed.
  void end_window();

  bool one_program(uint32_t n_tok) const override { return program_window_ && n_tok <= kPoolMaxTokens; }
  void emit_handoff(uint32_t il, uint32_t n_tok, std::vector<strata_op>& ops) const override;
  void emit_takeover(uint32_t il, std::vector<strata_op>& ops) const override;
  bool program_mode() const { return program_; }
  void place(uint32_t il, uint32_t n_tok) override;
  const strata_expert_table* table(uint32_t il) const override { return &tables_[il]; }
  strata_tensor precomputed_rows(uint32_t n_tok, uint32_t k) const override;

  const experts::ExpertCache& cache() const { return *cache_; }
  const experts::PlanCounters& plans() const { return counters_; }
  const experts::ExpertArena& arena() const { return *arena_; }
  const HybridTimes& times() const { return times_; }
  void reset_counts();
  double pcie_frac() const { return planner_->pcie_frac(); }
  // The decode roofline's inputs, measured at start with pcie_frac: auto (0 otherwise): weights read from VRAM at
  // the device's copy rate, misses at the host's read rate plus the pinned link's.
  struct Rates {
    double hbm = 0, h2d = 0, cpu_read = 0;  // bytes/s
  };
  const Rates& rates() const { return rates_; }
  // The dense weights one token reads (all but the routed experts and the embedding table).
  uint64_t dense_token_bytes() const { return dense_token_bytes_; }
  // Windows of more tokens than this read every miss over PCIe (the pool takes decode-sized windows).
  static constexpr uint32_t kPoolMaxTokens = 8;
  // A few lines: the arena, the slots, the link, the share over PCIe.
  const std::string& describe() const { return description_; }

 private:
  const void* slot_address(uint32_t slot) const;
  // What simple and fast mode share: the layer's routes read, the plan made and counted, the table's entries written
  // in mapped memory and the PCIe copies enqueued (copies_done_ recorded after them when there are any).
  experts::LayerPlan plan_layer(uint32_t il, uint32_t n_tok);
  // The placer's loop, and one window's layers placed in order (raising every placed flag on an error).
  void placer_main();
  void place_program(uint32_t n_tok);
  void release_program();
  int32_t* routed_flag(uint32_t il) const { return flags_.data() + 2 * il; }
  int32_t* placed_flag(uint32_t il) const { return flags_.data() + 2 * il + 1; }
  void run_pool(uint32_t il, uint32_t n_tok, const std::vector<experts::PlannedExpert>& cpu);

  const Model& model_;
  Activations& act_;
  DeviceMemory& mem_;
  DeviceQueues& queues_;
  ExpertPoolRef pool_;
  uint32_t n_embd_ = 0, k_max_ = 0, max_tokens_ = 0;
  int adapt_swaps_ = 0;
  bool program_ = false;         // fast mode available
  bool program_window_ = false;  // and taken by the current window
  std::string description_;

  std::unique_ptr<experts::ExpertArena> arena_;
  std::unique_ptr<HostRegistration> arena_lock_;
  std::unique_ptr<experts::ExpertCache> cache_;
  std::unique_ptr<experts::Planner> planner_;
  experts::PlanCounters counters_;
  HybridTimes times_;
  Rates rates_;
  uint64_t dense_token_bytes_ = 0;

  std::vector<Buffer<unsigned char>> class_slots_;  // per slot class: n_slots x slot_bytes
  Buffer<unsigned char> staging_;                   // staging_slots_ x staging_bytes_
  uint32_t staging_slots_ = 0;
  uint64_t staging_bytes_ = 0;
  std::vector<Buffer<strata_expert_weights>> device_entries_;  // per layer, what MOE_ROUTED reads
  std::vector<Buffer<strata_expert_weights>> host_entries_;    // per layer, mapped: the copy's source
  std::vector<strata_expert_table> tables_;
  Buffer<float> pool_rows_;                         // mapped [n_embd, k * max pool tokens]: MOE_ROUTED's src3
  Buffer<float> pool_x_;                            // mapped [n_embd, max pool tokens]: the stage's normed rows
  bool pool_x_ready_ = false;                       // run_stage copied them for the coming place()
  std::unique_ptr<DeviceEvent> stage_done_;
  Buffer<int32_t> flags_;                           // mapped, per layer: routed (device sets), placed (host sets)
  std::vector<uint32_t> moe_layers_;
  // The placer thread (fast mode), started by the first program.
  std::thread placer_;
  std::mutex placer_mutex_;
  std::condition_variable placer_wake_, placer_idle_;
  uint64_t placer_started_ = 0, placer_finished_ = 0;  // windows handed to it, and placed
  uint32_t placer_n_tok_ = 0;
  bool placer_stop_ = false;
  std::atomic<bool> placer_abort_{false};  // the program failed: stop waiting for its flags
  std::exception_ptr placer_error_;
  std::unique_ptr<DeviceStream> copy_stream_;
  std::unique_ptr<DeviceEvent> copies_done_;

  // Scratch of one host step.
  std::vector<int32_t> ids_;
  std::vector<float> weights_, x_, rows_;
  format::ExpertRoutes routes_;
  std::vector<experts::ExpertUse> uses_;
  std::vector<uint32_t> cpu_ids_, offsets_, token_index_, columns_;  // the pool's op; columns_: each pair's t * k + j
  std::vector<float> route_weight_;
  std::vector<strata_expert_weights> cpu_weights_;
};

}  // namespace strata
