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
// normed rows to mapped memory and raises the layer's "routed" flag. A placer thread, spinning on the flags in
// order, places the layer exactly as simple mode does (same plan, same table, same pool rows) and enqueues its PCIe
// copies; a watcher thread raises "placed" once they landed, while the placer runs the pool; the device, waiting
// on that flag, copies the table in and runs MOE_ROUTED, whose sums wait for the pool's rows on their own flag (at
// the end of src3). So the device's experts, the PCIe reads and the pool overlap, with no host synchronization
// inside the step, and the bytes are simple mode's. Placing and watching have threads of their own
// (strata/window_worker.hpp) because enqueueing a program can itself wait for the device (a full launch queue, a
// first run).
// Prompt windows (longer than the pool's cut-over) read every miss over PCIe; with experts.prompt_chunks the copies
// come in chunks through two staging halves and the device computes each as it lands (MOE_ROUTED rows out), off by
// default because it measured slower. With a balancer plugin (pcie_balance), each one-token fast-mode layer's PCIe
// count is the plugin's, fitted to the per-layer samples this path hands it after every such window.
// Adaptive swaps run between windows, on the copy stream, and a slot changes hands only after its copy is done.
// With a peer card (runtime.peer_device, peer_tier.hpp) the cached experts are dealt between the two cards, and a
// layer's PEER experts are computed there while the copies fly and the pool runs; their rows come back through
// mapped host memory into src3 (with the pool's in decode windows; the peer's own rows buffer in prompt windows).
// With a peer link (link_tier.hpp, another engine process on another card), the cache holds this role's share of
// the dealt experts, its residency is published after every fill and swap, a decode window's experts the other
// card holds are asked of the other engine (their rows come into src3 like the pool's; late ones are computed by
// the pool), and a service thread (link_service.hpp) answers the other's requests with this card's slots.
//
// The class's work, a file per responsibility: hybrid_setup.cpp (the constructor: arena, tables, staging, slots, the
// share over PCIe, the planner, the cut-over), hybrid_windows.cpp (a window's frame and the swaps after it),
// hybrid_layer_plan.cpp (a layer's plan and table, both modes), hybrid_host_step.cpp (simple mode's step),
// hybrid_prompt_chunks.cpp (the prompt path's chunks), hybrid_pool_rows.cpp (src3: the pool's call, the peer's and
// the link's rows), hybrid_device_program.cpp (fast mode: the program, the placer and the watcher),
// hybrid_observation.cpp (the program's time by layer, the balancer's samples), hybrid_summary.cpp (the summary).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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
#include "strata/experts/pool_roofline.hpp"
#include "strata/format/expert_routes.hpp"
#include "strata/model.hpp"
#include "strata/window_worker.hpp"
#include "link_service.hpp"
#include "link_tier.hpp"
#include "peer_tier.hpp"
#include "slot_buffers.hpp"

namespace strata {

class DeviceWeights;

// The CPU pool of a backend plugin that provides the expert_pool family (cpu_avx2).
struct ExpertPoolRef {
  const strata_expert_pool_v1* table = nullptr;
  void* ctx = nullptr;
  std::string name;
  explicit operator bool() const { return table != nullptr; }
};

// A plugin of the balancer family (pcie_balance): each layer's PCIe count from costs it fits to the samples the
// hybrid path hands it after every fast-mode window.
struct BalancerRef {
  const strata_balancer_v1* table = nullptr;
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
  double plan_s = 0;     // of which planning: routes read, plan made, table written, copies enqueued
  double pool_s = 0;     // the pool's compute calls
  uint64_t pool_layers = 0;
  // The pool's roofline: the weights its calls read, the time inside them, and the tokens of the windows it
  // serves (pool_s above also counts gathering the pairs and placing the rows).
  experts::PoolTraffic pool;
  uint64_t layers = 0;   // MoE layers placed (a layer of a window counts once)
  // Fast mode, per program, from the host's clock: a layer's host part runs from its routes seen to its last flag
  // raised (placed, rows); the device alone is the rest of the program (the device computing with nothing of the
  // host's pending: attention, the router, the MoE's tail). The two add up to program_s.
  double host_part_s = 0;
  double device_alone_s = 0;
  double copies_landed_s = 0;  // from routes seen to the PCIe copies landed, summed over layers with copies
  uint64_t copy_layers = 0;
  uint64_t program_layers = 0;  // MoE layers placed inside programs
  uint64_t chunked_layers = 0;  // the prompt path: layers whose PCIe experts came in chunks
  uint64_t chunks = 0;          // and their chunks
  uint64_t copies = 0;   // experts read over PCIe
  uint64_t swaps = 0;    // adaptive swaps committed
  double window_s = 0;   // windows in all, from begin_window to end_window (what the peer card's busy share is of)
};

// What a hybrid path shares with another card, when there is one.
struct HybridCards {
  Backend* peer = nullptr;  // runtime.peer_device: the peer tier's device (peer_tier.hpp)
  LayerRange layers;        // runtime.layer_split: this card's layers (its cache holds only their experts)
  std::shared_ptr<experts::ExpertArena> arena;  // the first card's host arena, mapped and registered already
  // The peer link to another engine process (link_tier.hpp), open; its role picks this card's share of the dealt
  // experts (role 0 the first, role 1 the second). `link_device`: a second instance of this card's backend on the
  // same device, on which the service computes the other's rows (null: this engine asks but does not serve).
  LinkTier* link = nullptr;
  uint32_t link_role = 0;
  Backend* link_device = nullptr;
};

class HybridMoe final : public ExpertPlacement {
 public:
  // Places the dense-weights engine's experts: the host arena (registered with the device, or pageable with a
  // warning), the cache's slots (budget from experts.cache and the device's free memory now), the staging slots for
  // windows of up to max_tokens, and the first residents. `act` must outlive this. Throws strata::Error with the key
  // to change when the budget does not fit.
  // `program`: fast mode is wanted (runtime.graphs) and the backend runs COPY, SIGNAL and WAIT. `supports`: whether
  // the backend runs an op (the prompt path's chunks need MOE_ROUTED's rows-out mode).
  HybridMoe(const Model& model, Activations& act, DeviceMemory& mem, DeviceQueues& queues,
            const config::ExpertsConfig& experts, ExpertPoolRef pool, BalancerRef balancer, uint32_t max_tokens,
            unsigned threads, bool program, std::function<bool(const strata_op&)> supports, HybridCards cards = {});
  ~HybridMoe() override;
  // The layers' expert forms (gpt-oss's biases and activation) with their device addresses, into every table the
  // device computes from. Throws strata::Error when a form meets a tier that cannot carry it yet (the peer card, the
  // peer link).
  void use_expert_forms(const DeviceWeights& weights);

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
  bool rows_ready_flag(uint32_t n_tok) const override { return one_program(n_tok) && n_tok <= pool_max_tokens_; }
  // Stamps ride along only with the balancer (stamped programs are other graphs): see stamps_.
  bool rows_stamped(uint32_t n_tok) const override { return stamping_ && rows_ready_flag(n_tok); }
  void emit_handoff(uint32_t il, uint32_t n_tok, std::vector<strata_op>& ops) const override;
  void emit_takeover(uint32_t il, std::vector<strata_op>& ops) const override;
  bool program_mode() const { return program_; }
  void place(uint32_t il, uint32_t n_tok) override;
  const strata_expert_table* table(uint32_t il) const override { return &tables_[il]; }
  strata_tensor precomputed_rows(uint32_t n_tok, uint32_t k) const override;

  const experts::ExpertCache& cache() const { return *cache_; }
  // The peer card's tier, or null without runtime.peer_device.
  const PeerTier* peer() const { return peer_.get(); }
  PeerTier* peer() { return peer_.get(); }
  // The peer link's two sides, or null without one.
  const LinkTier* link() const { return link_; }
  LinkService* service() { return service_.get(); }
  const LinkService* service() const { return service_.get(); }
  const experts::PlanCounters& plans() const { return counters_; }
  const experts::ExpertArena& arena() const { return *arena_; }
  // For a second card's hybrid path (runtime.layer_split): one host copy of the experts for both.
  std::shared_ptr<experts::ExpertArena> shared_arena() const { return arena_; }
  const HybridTimes& times() const { return times_; }
  void reset_counts();
  double pcie_frac() const { return planner_->pcie_frac(); }
  // A request's own share (nullopt: the launch's or the probe's again); while set, the balancer neither chooses nor
  // learns.
  void set_request_pcie_frac(std::optional<double> frac);
  // The decode roofline's inputs, measured at start with pcie_frac: auto (0 otherwise): weights read from VRAM at
  // the device's copy rate, misses at the pool's rate plus the pinned link's. The pool's rate is the slower of the
  // host's read rate and the pool timed on the model's experts (2-bit i-quants compute slower than RAM reads).
  struct Rates {
    double hbm = 0, h2d = 0, cpu_read = 0, pool = 0;  // bytes/s
    double pool_rate() const { return pool > 0 && pool < cpu_read ? pool : cpu_read; }
  };
  const Rates& rates() const { return rates_; }
  // The dense weights one token reads (all but the routed experts and the embedding table).
  uint64_t dense_token_bytes() const { return dense_token_bytes_; }
  // The most tokens a window the pool serves may have (its buffers; cuda's precomputed rows take up to 8).
  static constexpr uint32_t kPoolMaxTokens = 8;
  // The prompt path's cut-over: windows of more tokens than this read every miss over PCIe and compute it on the
  // device. Chosen at start from measured costs: the pool's time for one expert at 1 and at kPoolMaxTokens tokens
  // against one expert's PCIe read (0 without a pool).
  uint32_t pool_max_tokens() const { return pool_max_tokens_; }
  // A few lines: the arena, the slots, the link, the share over PCIe.
  const std::string& describe() const { return description_; }
  // The balancer's line (its fitted costs and mean choice), or empty without one.
  std::string balancer_summary() const;
  // This card's block of the decode summary (set-up, hits and sources, times, peers, the roofline); a decode rate
  // (tokens/s, > 0) adds the share of the roofline it reached.
  std::string summary(double decode_tokens_per_s = 0) const;

 private:
  const void* slot_address(uint32_t slot) const { return own_slots_.address(slot); }
  // The peer's rows of a decode window's PEER pairs into their columns of the pool's rows (src3).
  void take_peer_rows(const std::vector<experts::PlannedExpert>& peer) { take_rows(peer, peer_->rows()); }
  // `experts`' rows from `rows` (columns t x k + j) into their columns of the pool's rows (src3).
  void take_rows(const std::vector<experts::PlannedExpert>& experts, const float* rows);
  // The link's part of a layer (its experts were started): waits for the answer, takes the served experts' rows
  // and computes the others with the pool from x_.
  void finish_link(uint32_t il, uint32_t n_tok);
  // This card's residency, to the link (after the slots' copies landed).
  void publish_residency();
  // The [p0, p1) of the grouped routes' pairs of `expert` (one the plan names).
  std::pair<uint32_t, uint32_t> pairs_of(uint32_t expert) const;
  // What simple and fast mode share: the layer's routes read, the plan made and counted, the table's entries written
  // in mapped memory and the PCIe copies enqueued on the copy stream (each mode marks their end its own way).
  // `stage_copies` false: the PCIe experts are left to the caller (the prompt path's chunks).
  experts::LayerPlan plan_layer(uint32_t il, uint32_t n_tok, bool stage_copies = true);
  // The prompt path (simple mode, windows the pool does not serve): the layer's PCIe experts in chunks through two
  // staging halves; the device computes the hits, then each chunk as it lands, into chunk_rows_ (MOE_ROUTED rows
  // out), and the layer's own MOE_ROUTED computes the last chunk and sums every row in ascending expert id, taking
  // the others from chunk_rows_ (src3): the bytes of one MOE_ROUTED over all experts.
  void place_chunked(uint32_t il, uint32_t n_tok, const experts::LayerPlan& plan);
  // MOE_ROUTED in rows-out mode for layer il's window of n_tok tokens, computing `table`'s non-NULL entries.
  strata_op rows_out_op(uint32_t il, uint32_t n_tok, const strata_expert_table* table) const;
  // Whether the backend runs the chunks' ops for a window of n_tok tokens.
  bool chunks_supported(uint32_t n_tok);
  // One window's layers placed in order (the placer's job), and every flag raised (after an error).
  void place_program(uint32_t n_tok);
  void release_program();
  using clock_type_point = std::chrono::steady_clock::time_point;
  // Splits a finished program's time into the layers' host parts and the device alone (HybridTimes).
  void attribute_program(clock_type_point start, clock_type_point end);
  // Hands the balancer this program's per-layer samples.
  void observe_program();
  // The watcher's job: each layer's placed flag once its PCIe copies landed.
  void watch_program();
  // The placer's word to the watcher for layer il: 1 placed (nothing to watch), 2 copies to watch.
  void hand_to_watcher(uint32_t il, uint8_t state);
  int32_t* rows_flag(uint32_t il, uint32_t n_tok) const {
    return reinterpret_cast<int32_t*>(pool_rows_.data() + size_t{n_embd_} * model_.weights().layers[il].routing.k * n_tok);
  }
  int32_t* routed_flag(uint32_t il) const { return flags_.data() + 2 * il; }
  int32_t* placed_flag(uint32_t il) const { return flags_.data() + 2 * il + 1; }
  // Returns the call's seconds (also added to times_.pool_s).
  double run_pool(uint32_t il, uint32_t n_tok, const std::vector<experts::PlannedExpert>& cpu);
  // Whether the device takes every MoE layer's MOE_ROUTED for windows of n_tok tokens with the pool's rows behind
  // a ready flag, as one program needs. cuda's flagged form runs on its decode kernels, which some expert types
  // lack (IQ2_XS): such windows run in simple mode, where the host waits for the pool before the op.
  bool flagged_rows_supported(uint32_t n_tok);
  // Measures the pool and the link on one expert of layer il and sets pool_max_tokens_; returns a line saying so.
  std::string choose_cutover(uint32_t il);
  double measure_upload(uint32_t il);  // bytes/s of expert copies through upload_ (the pinned ring from the file)
  double measure_pool(uint32_t il);    // bytes/s of the pool on layer il's experts at one token each (a decode call)
  // The seconds of one pool call on layer il's experts `ids` (ascending), every one of n_tok tokens routed to each.
  double time_pool_call(uint32_t il, const std::vector<uint32_t>& ids, uint32_t n_tok);

  const Model& model_;
  Activations& act_;
  DeviceMemory& mem_;
  DeviceQueues& queues_;
  ExpertPoolRef pool_;
  BalancerRef balancer_;
  std::vector<strata_balance_sample> balance_samples_;  // this program's layers, for the balancer
  bool balancing_window_ = false;  // a one-token program window: the balancer chooses and gets samples
  bool request_frac_ = false;      // a request's own pcie_frac is in force (the balancer pauses)
  double launch_frac_ = 0;         // the share from the launch or the link probe
  std::vector<uint32_t> layer_cpu_, layer_pcie_;  // this program's per-layer counts (the placer writes them)
  // The device's clock at a layer's hand-offs (backend 1.5), written by the flag ops of one-token programs when the
  // balancer is on: per layer [routes out (SIGNAL), plan and PCIe copies in (WAIT)], mapped; and, read by the
  // placer from the shared slot after src3's ready flag, as the sums started waiting for the pool's rows. A 0 means
  // the backend did not stamp (older than 1.5): the host's clock stands in.
  bool stamping_ = false;
  Buffer<int64_t> stamps_;
  std::vector<int64_t> ready_stamps_;
  struct StampTimes {
    double plan_in_us = 0, own_done_us = 0;  // summed from routes out
    uint64_t layers = 0;
  } stamp_times_;
  const int64_t* ready_stamp_slot(uint32_t il, uint32_t n_tok) const {
    const auto at = (reinterpret_cast<uintptr_t>(rows_flag(il, n_tok) + 1) + 7) & ~uintptr_t{7};
    return reinterpret_cast<const int64_t*>(at);
  }
  uint32_t n_embd_ = 0, k_max_ = 0, max_tokens_ = 0;
  int adapt_swaps_ = 0;
  bool program_ = false;         // fast mode available
  bool program_window_ = false;  // and taken by the current window
  // Per window size 1..kPoolMaxTokens: whether the device takes every layer's MOE_ROUTED with the pool's rows
  // behind a ready flag (-1: not asked yet); see flagged_rows_supported.
  std::vector<int8_t> flagged_supported_ = std::vector<int8_t>(kPoolMaxTokens + 1, -1);
  bool chunk_window_ = false;    // the current window's layers take the prompt path's chunks
  std::function<bool(const strata_op&)> supports_;
  uint32_t pool_max_tokens_ = 0;
  std::string description_;

  std::shared_ptr<experts::ExpertArena> arena_;
  std::unique_ptr<HostRegistration> arena_lock_;
  std::unique_ptr<ExpertUpload> upload_;  // copies from the host copy (a pinned ring for the file)
  std::vector<ExpertUpload::Target> upload_targets_;  // a layer's (or a chunk's) PCIe copies, enqueued as one call
  std::unique_ptr<experts::ExpertCache> cache_;
  std::unique_ptr<experts::Planner> planner_;
  experts::PlanCounters counters_;
  HybridTimes times_;
  Rates rates_;
  uint64_t dense_token_bytes_ = 0;

  SlotBuffers own_slots_;                           // this card's slots, per slot class
  std::unique_ptr<PeerTier> peer_;
  LinkTier* link_ = nullptr;                        // the peer link's requester side (the engine owns it)
  uint32_t link_device_ = 0;                        // the planner's device index of the link's view
  bool link_window_ = false;                        // the current window asks the other engine
  std::vector<experts::PlannedExpert> link_experts_;  // the layer's experts asked of the other engine
  std::mutex card_lock_;                            // held while the service reads this card's slots or they change
  std::unique_ptr<LinkService> service_;            // stopped before the slots go
  bool peer_window_ = false;                        // the current window's PEER experts go to the peer card
  std::chrono::steady_clock::time_point window_start_;
  Buffer<unsigned char> staging_;                   // staging_slots_ x staging_bytes_
  uint32_t staging_slots_ = 0;
  uint64_t staging_bytes_ = 0;
  std::vector<Buffer<strata_expert_weights>> device_entries_;  // per layer, what MOE_ROUTED reads
  std::vector<Buffer<strata_expert_weights>> host_entries_;    // per layer, mapped: the copy's source
  std::vector<strata_expert_table> tables_;
  Buffer<float> pool_rows_;                         // mapped [n_embd, k * max pool tokens] and a flag: MOE_ROUTED's src3
  Buffer<float> pool_x_;                            // mapped [n_embd, max pool tokens]: the stage's normed rows
  bool pool_x_ready_ = false;                       // run_stage copied them for the coming place()
  std::unique_ptr<DeviceEvent> stage_done_;
  Buffer<int32_t> flags_;                           // mapped, per layer: routed (device sets), placed (host sets)
  std::vector<uint32_t> moe_layers_;
  // Fast mode's threads, made by the first program: the placer and the copy watcher.
  std::unique_ptr<WindowWorker> placer_, watcher_;
  std::atomic<bool> placer_abort_{false};  // the program failed: stop waiting for its flags
  std::atomic<bool> placer_failed_{false};  // the placer threw: stop watching
  uint32_t program_n_tok_ = 0;
  std::vector<std::unique_ptr<DeviceEvent>> layer_copies_;  // per layer: its PCIe copies, for the watcher
  // Per layer, this program's moments: routes seen, placed raised (by the placer or the watcher), rows raised.
  std::vector<std::chrono::steady_clock::time_point> seen_at_, placed_at_, rows_at_;
  std::unique_ptr<std::atomic<uint8_t>[]> watch_;           // per layer: 0 not placed, 1 placed, 2 copies to watch
  std::unique_ptr<DeviceStream> copy_stream_;
  std::unique_ptr<DeviceEvent> copies_done_;
  // The prompt path's chunks (when the backend has MOE_ROUTED's rows-out mode): per op of a layer, a table (host,
  // mapped: the copy's source; device: what the op reads) and its header; the rows they write; and per staging
  // half, the events that say its chunk landed and was computed.
  bool chunkable_ = false;
  uint32_t chunks_ = 0;  // experts.prompt_chunks: the most chunks of a layer
  std::vector<Buffer<strata_expert_weights>> chunk_host_, chunk_device_;
  std::vector<strata_expert_table> chunk_tables_;
  Buffer<float> chunk_rows_;  // device: [n_embd, k * max_tokens]
  std::unique_ptr<DeviceEvent> chunk_copied_[2], chunk_computed_[2];

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
