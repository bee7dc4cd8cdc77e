// The hybrid MoE path (simple mode): the dense weights and a cache of experts in VRAM; each MoE layer's host step
// (ExpertPlacement::place, after the layer's ROUTER) reads the router's choices, plans each chosen expert as a
// cache HIT, a PCIe read or a CPU pool computation, copies the PCIe experts from the host arena into staging slots
// on a copy stream (the compute stream waits for them with an event), runs the pool on the CPU experts while the
// copies fly, and writes the layer's expert table: slot addresses for HIT and PCIe experts, NULL for the pool's,
// whose weighted rows MOE_ROUTED then reads from mapped host memory (its src3). The sum of each token's rows keeps
// ascending expert id, so every byte equals the all-GPU result whatever the split.
//
// Each step synchronizes the host with the device once per MoE layer (the engine runs a stage, then its host
// step). Adaptive swaps run between windows, on the copy stream, and a slot changes hands only after its copy is
// done.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
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
  double stage_s = 0;    // the placement stages' ops on the device, waited for (the GPU's share of a step)
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
  HybridMoe(const Model& model, Activations& act, DeviceMemory& mem, DeviceQueues& queues,
            const config::ExpertsConfig& experts, ExpertPoolRef pool, uint32_t max_tokens, unsigned threads);
  ~HybridMoe() override;

  void begin_window(uint32_t n_tok);
  // Runs a stage that ends in a placement: its ops, then (for a window the pool may serve) the copy of its normed
  // rows into pinned memory, with one wait for both, so the pool's input needs no download of its own.
  void run_stage(std::span<const strata_op> ops, uint32_t n_tok);
  // Adaptive swaps (experts.adapt_swaps) after a window, committed once their copies landed.
  void end_window();

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
  void run_pool(uint32_t il, uint32_t n_tok, const std::vector<experts::PlannedExpert>& cpu);

  const Model& model_;
  Activations& act_;
  DeviceMemory& mem_;
  DeviceQueues& queues_;
  ExpertPoolRef pool_;
  uint32_t n_embd_ = 0, k_max_ = 0, max_tokens_ = 0;
  int adapt_swaps_ = 0;
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
