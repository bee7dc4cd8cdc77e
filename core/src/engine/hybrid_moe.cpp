#include "hybrid_moe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <sys/prctl.h>

#include "../experts/human_bytes.hpp"
#include "strata/error.hpp"
#include "strata/experts/cache_setup.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/link_probe.hpp"
#include "strata/experts/link_share.hpp"
#include "strata/gate.hpp"
#include "strata/log.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"
#include "strata/tensor_role.hpp"

namespace strata {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// n values of a buffer the device may hold, into host memory.
template <class T>
void read_back(DeviceMemory& mem, const Buffer<T>& src, size_t n, std::vector<T>& out) {
  out.resize(n);
  if (src.on_device()) {
    mem.download(out.data(), src.data(), n * sizeof(T));
  } else {
    std::memcpy(out.data(), src.data(), n * sizeof(T));
  }
}

// A table of expert entries as the i32 words COPY moves.
static_assert(sizeof(strata_expert_weights) % sizeof(int32_t) == 0, "entries copy as whole i32 words");
strata_tensor entry_words(const strata_expert_weights* entries, uint32_t n) {
  return tensor_i32(reinterpret_cast<const int32_t*>(entries),
                    {static_cast<int64_t>(n * sizeof(strata_expert_weights) / sizeof(int32_t))});
}

}  // namespace

HybridMoe::HybridMoe(const Model& model, Activations& act, DeviceMemory& mem, DeviceQueues& queues,
                     const config::ExpertsConfig& experts_cfg, ExpertPoolRef pool, BalancerRef balancer,
                     uint32_t max_tokens, unsigned threads, bool program, std::function<bool(const strata_op&)> supports,
                     HybridCards cards)
    : model_(model),
      act_(act),
      mem_(mem),
      queues_(queues),
      pool_(std::move(pool)),
      balancer_(std::move(balancer)),
      program_(program),
      supports_(std::move(supports)) {
  const HParams& hp = model.hparams();
  const ModelWeights& w = model.weights();
  n_embd_ = hp.n_embd;
  max_tokens_ = std::max<uint32_t>(max_tokens, 1);
  adapt_swaps_ = experts_cfg.adapt_swaps;
  // The experts of this card's layers (all of them, without a layer split).
  experts::ExpertGeometry geometry = experts::expert_geometry(w);
  for (uint32_t il = 0; il < geometry.layers.size(); ++il) {
    if (!cards.layers.holds(il)) geometry.layers[il] = experts::LayerExperts{};
  }
  Backend* const peer = cards.peer;
  uint32_t max_expert = 0;
  for (uint32_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& lw = w.layers[il];
    if (!lw.has_experts() || !cards.layers.holds(il)) continue;
    k_max_ = std::max(k_max_, lw.routing.k);
    max_expert = std::max(max_expert, lw.routing.n_expert);
  }
  for (const gguf::TensorView& t : model.file().tensors()) {
    if (classify_tensor(t.name).part == TensorPart::RoutedExperts) continue;
    if (&t == w.token_embd && w.output != w.token_embd) continue;  // a token reads one row of it
    dense_token_bytes_ += t.n_bytes;
  }
  copy_stream_ = std::make_unique<DeviceStream>(queues);
  copies_done_ = std::make_unique<DeviceEvent>(queues);

  // The host arena, page-locked so that copies from it run at the link's speed.
  const gate::ModelIdentity who = gate::identify(model);
  // A second card (layer split) takes the first card's: registered as portable, it is page-locked for every device.
  if (cards.arena) {
    arena_ = std::move(cards.arena);
    description_ = "experts in RAM: the first card's host copy (" + experts::human_bytes(arena_->size()) + ")";
  } else {
    arena_ = std::make_shared<experts::ExpertArena>(w, threads, experts_cfg.arena.value_or(""), who.header_hash);
    arena_lock_ = std::make_unique<HostRegistration>(queues, arena_->data(), arena_->size(), true);
    description_ = "experts in RAM: " + experts::human_bytes(arena_->size()) +
                   (arena_->file().empty() ? " of private memory" : " in " + arena_->file()) +
                   (arena_->filled() ? ", filled in " : ", found complete and mapped in ") +
                   std::to_string(arena_->fill_seconds()).substr(0, 4) + " s, " +
                   (arena_lock_->locked() ? "page-locked" : "pageable");
  }
  if (arena_lock_ && !arena_lock_->locked()) {
    log::warn("the experts' host copy could not be page-locked (" + arena_lock_->why() +
              "): PCIe reads of missed experts will run at pageable speed; raise the locked-memory limit "
              "(ulimit -l) or read fewer misses over PCIe (experts.pcie_frac)");
  }

  // The layers' tables.
  tables_.resize(w.layers.size());
  device_entries_.resize(w.layers.size());
  host_entries_.resize(w.layers.size());
  for (uint32_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& lw = w.layers[il];
    if (!lw.has_experts() || !cards.layers.holds(il)) continue;
    const experts::ExpertLayout& layout = arena_->layout(il);
    const uint32_t n = lw.routing.n_expert;
    host_entries_[il] = Buffer<strata_expert_weights>::mapped(n, mem);
    device_entries_[il] = Buffer<strata_expert_weights>(n, &mem);
    tables_[il] = strata_expert_table{n_embd_, lw.experts.n_ff, n, layout.gate_type, layout.up_type, layout.down_type,
                                      device_entries_[il].data()};
    moe_layers_.push_back(il);
  }

  // The prompt path's chunks, where the backend computes them (MOE_ROUTED rows out): their rows, tables and events.
  chunks_ = static_cast<uint32_t>(std::max(0, experts_cfg.prompt_chunks));
  if (chunks_ > 0 && max_tokens_ > kPoolMaxTokens && !moe_layers_.empty()) {
    chunk_rows_ = Buffer<float>(size_t{n_embd_} * k_max_ * max_tokens_, &mem);
    chunkable_ = chunks_supported(max_tokens_);
    if (!chunkable_) chunk_rows_ = Buffer<float>();
  }

  // Staging slots for a layer's PCIe experts: with chunks, the misses of a window the pool may serve (the chunks
  // take two halves); without, every expert a window may name.
  uint64_t widest = 0;
  for (uint32_t il = 0; il < w.layers.size(); ++il) widest = std::max(widest, arena_->layout(il).bytes);
  staging_slots_ = std::min<uint32_t>(max_expert, k_max_ * (chunkable_ ? std::min(max_tokens_, kPoolMaxTokens) : max_tokens_));
  if (chunkable_) staging_slots_ = std::max<uint32_t>(staging_slots_, 2);
  staging_bytes_ = (widest + 255) / 256 * 256;  // slot starts stay 256-byte aligned
  staging_ = Buffer<unsigned char>(uint64_t{staging_slots_} * staging_bytes_, &mem);
  for (uint32_t il : moe_layers_) {
    const uint32_t n = tables_[il].n_expert;
    // Until the first placement: the right types and addresses that exist.
    for (uint32_t e = 0; e < n; ++e) host_entries_[il][e] = arena_->layout(il).at(staging_.data());
    mem.upload(device_entries_[il].data(), host_entries_[il].data(), n * sizeof(strata_expert_weights));
  }
  if (chunkable_) {
    // A layer's ops: the hits, then every chunk but the last (which the layer's MOE_ROUTED computes).
    const uint32_t half = staging_slots_ / 2;
    const uint32_t ops = 1 + std::max(chunks_, (max_expert + half - 1) / half);
    for (uint32_t i = 0; i < ops; ++i) {
      chunk_host_.push_back(Buffer<strata_expert_weights>::mapped(max_expert, mem));
      chunk_device_.emplace_back(max_expert, &mem);
    }
    chunk_tables_.resize(ops);
    for (auto& e : chunk_copied_) e = std::make_unique<DeviceEvent>(queues);
    for (auto& e : chunk_computed_) e = std::make_unique<DeviceEvent>(queues);
  }
  pool_rows_ = Buffer<float>::mapped(size_t{n_embd_} * k_max_ * kPoolMaxTokens + 16, mem);  // and the ready flag
  pool_x_ = Buffer<float>::mapped(size_t{n_embd_} * kPoolMaxTokens, mem);
  stage_done_ = std::make_unique<DeviceEvent>(queues);
  flags_ = Buffer<int32_t>::mapped(2 * w.layers.size(), mem);
  watch_ = std::make_unique<std::atomic<uint8_t>[]>(w.layers.size());
  if (program_) {
    layer_copies_.resize(w.layers.size());
    seen_at_.resize(w.layers.size());
    placed_at_.resize(w.layers.size());
    rows_at_.resize(w.layers.size());
    for (uint32_t il : moe_layers_) layer_copies_[il] = std::make_unique<DeviceEvent>(queues);
  }

  // The slots: what experts.cache allows of what the device has left now (dense weights, KV cache, activations
  // and staging are already placed). With a peer card, its slots get the same share of what it has left once this
  // card's are placed (the same GPU, as a second logical device, counts this card's slots then), and the ranked
  // experts are dealt between the two.
  experts::DeviceRoom room;
  room.free_bytes = mem.free_bytes();
  const experts::ModelIdentity identity{who.header_hash, geometry.n_layer(), geometry.max_experts()};
  experts::SlotBudget own_budget = experts::plan_slot_budget(experts_cfg.cache, geometry, room);
  own_slots_ = SlotBuffers(own_budget, *arena_, mem);
  if (peer != nullptr) {
    peer_ = std::make_unique<PeerTier>(*peer, model, *arena_, max_tokens_);
    experts::SlotBudget peer_budget = experts::plan_slot_budget(experts_cfg.cache, geometry, peer_->room());
    experts::DealtCaches dealt =
        experts::make_dealt_caches(experts_cfg, geometry, std::move(own_budget), std::move(peer_budget), identity);
    cache_ = std::move(dealt.own);
    peer_->set_cache(std::move(dealt.peer));
    if (!peer_->runs(1) || !peer_->runs(max_tokens_)) {
      throw Error("runtime.peer_device: " + peer->describe() + " does not run MOE_ROUTED with rows out (backend 1.4) for "
                  "this model's experts; set runtime.peer_device to -1");
    }
  } else if (cards.link != nullptr) {
    // Two engines on two like cards: the ranked experts are dealt between them as between a card and its peer, and
    // each role takes its share, so that the cards hold different experts.
    experts::SlotBudget other_budget = own_budget;
    experts::DealtCaches dealt =
        experts::make_dealt_caches(experts_cfg, geometry, std::move(own_budget), std::move(other_budget), identity);
    cache_ = cards.link_role == 0 ? std::move(dealt.own) : std::move(dealt.peer);
  } else {
    cache_ = experts::make_expert_cache(experts_cfg, geometry, std::move(own_budget), identity);
  }
  const experts::SlotBudget& budget = cache_->budget();
  const auto t_fill = clock_type::now();
  own_slots_.queue_fill(*cache_, *arena_, queues, copy_stream_->get());
  queues.record(copies_done_->get(), copy_stream_->get());
  queues.synchronize(copies_done_->get());
  description_ += "; VRAM slots: " + budget.describe() + ", filled in " + std::to_string(seconds_since(t_fill)).substr(0, 4) +
                  " s; staging: " + std::to_string(staging_slots_) + " x " + experts::human_bytes(staging_bytes_) +
                  (chunkable_ ? " (prompts: a layer's PCIe experts in up to " + std::to_string(chunks_) +
                                    " chunks through its two halves, computed as they land)"
                              : "");

  // The share of misses read over PCIe.
  double frac = 0;
  if (!pool_) {
    frac = 1.0;
    description_ += "; no CPU pool (no plugin provides expert_pool): every miss is read over PCIe";
  } else if (experts_cfg.pcie_frac) {
    frac = *experts_cfg.pcie_frac;
    description_ += "; pcie_frac " + std::to_string(frac).substr(0, 5) + " (set)";
  } else {
    uint64_t n_experts = 0;
    for (const experts::LayerExperts& l : geometry.layers) n_experts += l.n_expert;
    const experts::LinkMeasure link = experts::probe_link(mem, queues);
    rates_.h2d = link.h2d_bytes_per_s;
    rates_.cpu_read = experts::measure_host_read(std::max(1u, threads), uint64_t{1} << 30);
    rates_.hbm = experts::measure_device_copy(mem, queues);
    frac = experts::default_pcie_frac(rates_.h2d, rates_.cpu_read, geometry.routed_bytes() / std::max<uint64_t>(n_experts, 1),
                                      link.copy_overhead_s);
    description_ += "; pcie_frac " + std::to_string(frac).substr(0, 5) + " from the link probe (" + experts::describe(link) +
                    "; host read " + std::to_string(rates_.cpu_read / 1e9).substr(0, 6) + " GB/s with " +
                    std::to_string(threads) + " threads; device copy " + std::to_string(rates_.hbm / 1e9).substr(0, 7) + " GB/s)";
  }
  if (pool_) description_ += "; CPU pool: " + pool_.name + " (" + std::to_string(pool_.table->worker_count(pool_.ctx)) + " workers)";
  description_ += program_ ? "; fast mode (decode windows run as one device program)"
                           : "; simple mode (a host step per MoE layer)";
  std::vector<const experts::ResidencyView*> tiers{cache_.get()};
  if (peer_) {
    tiers.push_back(peer_.get());
    description_ += "; " + peer_->describe();
  }
  if (cards.link != nullptr) {
    link_ = cards.link;
    link_device_ = static_cast<uint32_t>(tiers.size());
    tiers.push_back(link_);
    if (cards.link_device != nullptr) {
      service_ = std::make_unique<LinkService>(*link_, *cards.link_device, model, *arena_, max_tokens_, card_lock_,
                                               [this](uint32_t il, uint32_t e) -> const void* {
                                                 const auto slot = cache_->usable_slot({il, e});
                                                 return slot ? slot_address(*slot) : nullptr;
                                               });
    }
    publish_residency();
    description_ += "; peer link, role " + std::to_string(cards.link_role) + " (" + link_->describe() + ")" +
                    (pool_ ? "" : ": this engine serves but does not ask (it has no CPU pool for late experts)");
  }
  planner_ = std::make_unique<experts::Planner>(geometry, tiers, frac);
  launch_frac_ = frac;
  if (balancer_ && pool_ && program_) {
    // Decode windows in fast mode: the balancer's choice (the probe's share until its fits are warm).
    planner_->set_pcie_count_hook([this](uint32_t layer, std::span<const experts::ExpertUse> misses) {
      const auto n = static_cast<uint32_t>(misses.size());
      if (!balancing_window_) return planner_->default_pcie_count(n);
      const uint32_t m = balancer_.table->choose(balancer_.ctx, layer, n);
      return m == UINT32_MAX ? planner_->default_pcie_count(n) : std::min(m, n);
    });
    layer_cpu_.assign(w.layers.size(), 0);
    layer_pcie_.assign(w.layers.size(), 0);
    stamping_ = true;
    stamps_ = Buffer<int64_t>::mapped(2 * w.layers.size(), mem);
    ready_stamps_.assign(w.layers.size(), 0);
    description_ += "; each decode layer's PCIe share from " + balancer_.name + " (fitted costs; the probe's share until they are warm)";
  } else if (balancer_) {
    description_ += "; " + balancer_.name + " unused: it needs fast mode and a CPU pool";
  }
  if (pool_ && !moe_layers_.empty()) description_ += "; " + choose_cutover(moe_layers_.front());
}

std::string HybridMoe::choose_cutover(uint32_t il) {
  const LayerWeights& lw = model_.weights().layers[il];
  const experts::ExpertLayout& layout = arena_->layout(il);
  const uint32_t n_max = kPoolMaxTokens;
  // The pool on expert 0 with every token of a window routed to it, best of three (the first warms it up).
  std::vector<float> x(size_t{n_embd_} * n_max), rows(size_t{n_embd_} * n_max), weight(n_max, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  std::vector<uint32_t> index(n_max);
  for (uint32_t t = 0; t < n_max; ++t) index[t] = t;
  const uint32_t expert_id = 0;
  const strata_expert_weights w = layout.at(arena_->expert(il, 0));
  const auto pool_time = [&](uint32_t n) {
    const uint32_t offsets[2] = {0, n};
    const strata_moe_op m{n_embd_, lw.experts.n_ff, n, 1, &expert_id, &w, offsets, index.data(), weight.data(),
                          x.data(), rows.data()};
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = clock_type::now();
      throw_if_error(pool_.table->compute(pool_.ctx, &m, nullptr, 0), pool_.name, "expert_pool.compute");
      best = std::min(best, seconds_since(t0));
    }
    return best;
  };
  const double pool_1 = pool_time(1), pool_n = pool_time(n_max);
  // One expert over the link into a staging slot, best of three.
  double link = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clock_type::now();
    queues_.copy_async(staging_.data(), arena_->expert(il, 0), layout.bytes, STRATA_COPY_HOST_TO_DEVICE, copy_stream_->get());
    queues_.record(copies_done_->get(), copy_stream_->get());
    queues_.synchronize(copies_done_->get());
    link = std::min(link, seconds_since(t0));
  }
  // The pool's time grows with the tokens an expert serves; a read over the link does not. Decode windows (one
  // token) always split their misses by pcie_frac.
  pool_max_tokens_ = 1;
  for (uint32_t n = 2; n <= n_max; ++n) {
    const double pool_at_n = pool_1 + (pool_n - pool_1) * (n - 1) / (n_max - 1);
    if (pool_at_n <= link) pool_max_tokens_ = n;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "prompt path: windows of more than %u tokens read every miss over PCIe (one expert: the pool %.0f us at "
                "1 token, %.0f us at %u; a PCIe read %.0f us)",
                pool_max_tokens_, 1e6 * pool_1, 1e6 * pool_n, n_max, 1e6 * link);
  return line;
}

HybridMoe::~HybridMoe() {
  placer_.reset();
  watcher_.reset();
  // Copies may still read the arena or write slots.
  try {
    queues_.record(copies_done_->get(), copy_stream_->get());
    queues_.synchronize(copies_done_->get());
  } catch (const Error&) {
  }
}

strata_tensor HybridMoe::precomputed_rows(uint32_t n_tok, uint32_t k) const {
  if (n_tok <= pool_max_tokens_) return tensor_f32(pool_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  if (chunk_window_) return tensor_f32(chunk_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  if (peer_window_) return peer_->rows_tensor(n_tok, k);
  return no_tensor();
}

strata_op HybridMoe::rows_out_op(uint32_t il, uint32_t n_tok, const strata_expert_table* table) const {
  const uint32_t k = model_.weights().layers[il].routing.k;
  strata_op op = act_.moe_routed(n_embd_, k, n_tok, table);
  op.dst = tensor_f32(chunk_rows_.data(), {n_embd_, int64_t{k} * n_tok});
  op.i[2] = 1;
  return op;
}

bool HybridMoe::chunks_supported(uint32_t n_tok) {
  if (chunk_rows_.size() == 0 || !supports_ || n_tok > max_tokens_) return false;
  for (uint32_t il : moe_layers_) {
    strata_op rows = rows_out_op(il, n_tok, &tables_[il]);
    strata_op sum = act_.moe_routed(n_embd_, model_.weights().layers[il].routing.k, n_tok, &tables_[il]);
    sum.src[3] = rows.dst;  // the layer's own MOE_ROUTED, taking the chunks' rows
    if (!supports_(rows) || !supports_(sum)) return false;
  }
  return true;
}

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

void HybridMoe::reset_counts() {
  cache_->reset_stats();
  counters_ = experts::PlanCounters{};
  times_ = HybridTimes{};
  stamp_times_ = StampTimes{};
  if (peer_) peer_->reset_counts();
  if (service_) service_->reset_counts();
  if (link_) link_->reset_counts();
}

void HybridMoe::begin_window(uint32_t n_tok, bool program_allowed) {
  cache_->begin_window(n_tok);
  counters_.add_window(n_tok);
  program_window_ = program_ && program_allowed;
  balancing_window_ = balancer_ && !request_frac_ && one_program(n_tok) && n_tok == 1 && n_tok <= pool_max_tokens_;
  chunk_window_ = chunkable_ && n_tok > pool_max_tokens_ && !one_program(n_tok) && chunks_supported(n_tok);
  // The peer's rows need a way in: the pool's rows (decode windows; in a program, behind their ready flag), or, in
  // simple mode, the peer's own rows buffer as src3 (the chunked prompt path has src3 for its chunks).
  peer_window_ = peer_ != nullptr && peer_->attached() &&
                 (n_tok <= pool_max_tokens_ || (!one_program(n_tok) && !chunk_window_ && n_tok <= max_tokens_));
  // The link serves decode windows (its rows come in with the pool's, and the pool computes what comes late).
  link_window_ = link_ != nullptr && link_->begin_window(pool_ && n_tok <= pool_max_tokens_);
  window_start_ = clock_type::now();
}

void HybridMoe::set_request_pcie_frac(std::optional<double> frac) {
  request_frac_ = frac.has_value();
  planner_->set_pcie_frac(frac.value_or(launch_frac_));
}

void HybridMoe::emit_handoff(uint32_t il, uint32_t n_tok, std::vector<strata_op>& ops) const {
  if (pool_) {  // the pool's input rows, beside the routes
    strata_op copy = new_op(STRATA_OP_COPY);
    copy.src[0] = tensor_f32(act_.xn.data(), {n_embd_, n_tok});
    copy.dst = tensor_f32(pool_x_.data(), {n_embd_, n_tok});
    ops.push_back(copy);
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
  strata_op copy = new_op(STRATA_OP_COPY);
  const uint32_t n = tables_[il].n_expert;
  copy.src[0] = entry_words(host_entries_[il].data(), n);
  copy.dst = entry_words(device_entries_[il].data(), n);
  ops.push_back(copy);
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
        },
        /*first_cpu=*/true);
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

void HybridMoe::observe_program() {
  balance_samples_.clear();
  for (uint32_t il : moe_layers_) {
    strata_balance_sample s{};
    s.layer = il;
    s.n_cpu = layer_cpu_[il];
    s.n_pcie = layer_pcie_[il];
    // The host's side of the layer: from its routes seen to the pool's rows handed over, the same span the device's
    // side covers, so that max(device, host) is the layer's wait.
    s.pool_us = s.n_cpu > 0 ? 1e6 * std::chrono::duration<double>(rows_at_[il] - seen_at_[il]).count() : 0.0;
    // The GPU's side of the layer on its own clock: from its routes out to its own experts done (plan, PCIe copies
    // and the cache's and the copies' experts computed). Without stamps, the host's routes seen to copies landed.
    const int64_t out = stamping_ ? stamps_[2 * il] : 0, in = stamping_ ? stamps_[2 * il + 1] : 0;
    const int64_t done = stamping_ ? ready_stamps_[il] : 0;
    if (out > 0 && in >= out && done >= in) {
      s.gpu_us = 1e-3 * static_cast<double>(done - out);
      stamp_times_.plan_in_us += 1e-3 * static_cast<double>(in - out);
      stamp_times_.own_done_us += 1e-3 * static_cast<double>(done - out);
      ++stamp_times_.layers;
    } else {
      s.gpu_us = 1e6 * std::chrono::duration<double>(placed_at_[il] - seen_at_[il]).count();
    }
    balance_samples_.push_back(s);
  }
  throw_if_error(balancer_.table->observe(balancer_.ctx, balance_samples_.data(), balance_samples_.size()),
                 balancer_.name, "balancer.observe");
}

std::string HybridMoe::balancer_summary() const {
  if (!balancer_ || !program_ || !pool_) return {};
  const char* line = balancer_.table->describe(balancer_.ctx);
  std::string out = line != nullptr ? line : "";
  const double n = static_cast<double>(stamp_times_.layers);
  char stamps[256];
  if (stamp_times_.layers > 0) {
    std::snprintf(stamps, sizeof stamps,
                  "\ndevice stamps per MoE layer (%llu layers): plan and PCIe copies in %.1f us after the routes went "
                  "out, the device's own experts done after %.1f us",
                  static_cast<unsigned long long>(stamp_times_.layers), stamp_times_.plan_in_us / n,
                  stamp_times_.own_done_us / n);
  } else {
    std::snprintf(stamps, sizeof stamps, "\nno device stamps yet (the GPU's samples use the host's clock)");
  }
  return out + stamps;
}

void HybridMoe::attribute_program(clock_type_point start, clock_type_point end) {
  const auto s = [](clock_type_point a, clock_type_point b) { return std::chrono::duration<double>(b - a).count(); };
  clock_type_point device_from = start;  // the device has been on its own since then
  for (uint32_t il : moe_layers_) {
    const clock_type_point last_flag = std::max(placed_at_[il], rows_at_[il]);
    times_.device_alone_s += s(device_from, seen_at_[il]);
    times_.host_part_s += s(seen_at_[il], last_flag);
    if (watch_[il].load(std::memory_order_relaxed) == 2) {
      times_.copies_landed_s += s(seen_at_[il], placed_at_[il]);
      ++times_.copy_layers;
    }
    device_from = last_flag;
    ++times_.program_layers;
  }
  times_.device_alone_s += s(device_from, end);
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
    queues_.copy_async(const_cast<void*>(slot_address(m.slot)), arena_->expert(m.incoming.layer, m.incoming.expert),
                       arena_->layout(m.incoming.layer).bytes, STRATA_COPY_HOST_TO_DEVICE, copy_stream_->get());
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
  uint32_t next = 0;
  for (const experts::PlannedExpert& p : plan.pcie) {
    if (!stage_copies) break;
    unsigned char* dst = staging_.data() + uint64_t{next++} * staging_bytes_;
    entries[p.expert] = layout.at(dst);
    queues_.copy_async(dst, arena_->expert(il, p.expert), layout.bytes, STRATA_COPY_HOST_TO_DEVICE, copy_stream_->get());
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

std::pair<uint32_t, uint32_t> HybridMoe::pairs_of(uint32_t expert) const {
  const auto at = std::lower_bound(routes_.expert_ids.begin(), routes_.expert_ids.end(), expert);
  if (at == routes_.expert_ids.end() || *at != expert) {
    throw Error("internal: expert " + std::to_string(expert) + " is planned but not routed");
  }
  const size_t i = static_cast<size_t>(at - routes_.expert_ids.begin());
  return {routes_.token_offsets[i], routes_.token_offsets[i + 1]};
}

void HybridMoe::finish_link(uint32_t il, uint32_t n_tok) {
  const std::vector<experts::PlannedExpert>& late = link_->finish();
  if (late.empty()) {
    take_rows(link_experts_, link_->rows());
    return;
  }
  std::vector<experts::PlannedExpert> served;
  for (const experts::PlannedExpert& p : link_experts_) {
    if (std::find_if(late.begin(), late.end(), [&](const experts::PlannedExpert& q) { return q.expert == p.expert; }) == late.end()) {
      served.push_back(p);
    }
  }
  take_rows(served, link_->rows());
  (void)run_pool(il, n_tok, late);  // from this engine's RAM copy, into their columns
}

void HybridMoe::publish_residency() {
  link_->publish([this](uint32_t il, uint32_t e) { return il < tables_.size() && e < tables_[il].n_expert && cache_->usable_slot({il, e}).has_value(); });
}

void HybridMoe::take_rows(const std::vector<experts::PlannedExpert>& experts, const float* rows) {
  for (const experts::PlannedExpert& p : experts) {
    const auto [p0, p1] = pairs_of(p.expert);
    for (uint32_t q = p0; q < p1; ++q) {
      const size_t column = routes_.route_index[q];
      std::memcpy(pool_rows_.data() + column * n_embd_, rows + column * n_embd_, n_embd_ * sizeof(float));
    }
  }
}

void HybridMoe::place_chunked(uint32_t il, uint32_t n_tok, const experts::LayerPlan& plan) {
  const experts::ExpertLayout& layout = arena_->layout(il);
  const uint32_t n_expert = tables_[il].n_expert;
  const strata_expert_weights none{nullptr, nullptr, nullptr, layout.gate_type, layout.up_type, layout.down_type, 0};
  const size_t n_miss = plan.pcie.size();
  const uint32_t half = staging_slots_ / 2;
  // Up to chunks_ chunks: each crosses the link while the device computes the one before (or the hits).
  const auto per_chunk = static_cast<uint32_t>(std::clamp<size_t>((n_miss + chunks_ - 1) / chunks_, 1, half));
  const auto n_chunks = static_cast<uint32_t>((n_miss + per_chunk - 1) / per_chunk);
  ++times_.chunked_layers;
  times_.chunks += n_chunks;
  uint32_t next_op = 0;
  // Enqueues MOE_ROUTED rows out on the experts `fill` enters in an otherwise empty table.
  const auto compute_rows = [&](const auto& fill) {
    strata_expert_weights* host = chunk_host_[next_op].data();
    std::fill(host, host + n_expert, none);
    fill(host);
    queues_.copy_async(chunk_device_[next_op].data(), host, size_t{n_expert} * sizeof(strata_expert_weights),
                       STRATA_COPY_HOST_TO_DEVICE, nullptr);
    chunk_tables_[next_op] = tables_[il];
    chunk_tables_[next_op].experts = chunk_device_[next_op].data();
    const strata_op op = rows_out_op(il, n_tok, &chunk_tables_[next_op]);
    queues_.compute_async(std::span<const strata_op>(&op, 1));
    ++next_op;
  };
  // The hits first: the device computes them while the first chunk crosses the link.
  if (!plan.hit.empty()) {
    compute_rows([&](strata_expert_weights* e) {
      for (const experts::PlannedExpert& h : plan.hit) e[h.expert] = layout.at(slot_address(h.slot));
    });
  }
  for (uint32_t c = 0; c < n_chunks; ++c) {
    const uint32_t b = c % 2;
    unsigned char* base = staging_.data() + uint64_t{b} * half * staging_bytes_;
    const size_t first = size_t{c} * per_chunk, last = std::min(n_miss, first + per_chunk);
    // This half's previous chunk must have been computed before its slots are overwritten.
    if (c >= 2) queues_.wait(copy_stream_->get(), chunk_computed_[b]->get());
    for (size_t i = first; i < last; ++i) {
      queues_.copy_async(base + (i - first) * staging_bytes_, arena_->expert(il, plan.pcie[i].expert), layout.bytes,
                         STRATA_COPY_HOST_TO_DEVICE, copy_stream_->get());
    }
    queues_.record(chunk_copied_[b]->get(), copy_stream_->get());
    queues_.wait(nullptr, chunk_copied_[b]->get());
    const auto fill = [&](strata_expert_weights* e) {
      for (size_t i = first; i < last; ++i) e[plan.pcie[i].expert] = layout.at(base + (i - first) * staging_bytes_);
    };
    if (c + 1 < n_chunks) {
      compute_rows(fill);
      queues_.record(chunk_computed_[b]->get(), nullptr);
    } else {
      // The last chunk is the layer's own MOE_ROUTED's: its table holds that chunk alone; every other row is in
      // chunk_rows_.
      strata_expert_weights* entries = host_entries_[il].data();
      std::fill(entries, entries + n_expert, none);
      fill(entries);
    }
  }
}

double HybridMoe::run_pool(uint32_t il, uint32_t n_tok, const std::vector<experts::PlannedExpert>& cpu) {
  const auto t0 = clock_type::now();
  const LayerWeights& lw = model_.weights().layers[il];
  const experts::ExpertLayout& layout = arena_->layout(il);
  cpu_ids_.clear();
  cpu_weights_.clear();
  token_index_.clear();
  route_weight_.clear();
  columns_.clear();
  offsets_.assign(1, 0);
  for (const experts::PlannedExpert& c : cpu) {  // ascending id, a subset of the grouped routes
    const auto [p0, p1] = pairs_of(c.expert);
    cpu_ids_.push_back(c.expert);
    cpu_weights_.push_back(layout.at(arena_->expert(il, c.expert)));
    token_index_.insert(token_index_.end(), routes_.token_index.begin() + p0, routes_.token_index.begin() + p1);
    route_weight_.insert(route_weight_.end(), routes_.route_weight.begin() + p0, routes_.route_weight.begin() + p1);
    columns_.insert(columns_.end(), routes_.route_index.begin() + p0, routes_.route_index.begin() + p1);
    offsets_.push_back(static_cast<uint32_t>(token_index_.size()));
  }
  rows_.resize(size_t{n_embd_} * columns_.size());
  const strata_moe_op m{n_embd_,
                        lw.experts.n_ff,
                        n_tok,
                        static_cast<uint32_t>(cpu_ids_.size()),
                        cpu_ids_.data(),
                        cpu_weights_.data(),
                        offsets_.data(),
                        token_index_.data(),
                        route_weight_.data(),
                        x_.data(),
                        rows_.data()};
  throw_if_error(pool_.table->compute(pool_.ctx, &m, nullptr, 0), pool_.name, "expert_pool.compute");
  // Each pair's row to its column t * k + j of MOE_ROUTED's src3.
  for (size_t p = 0; p < columns_.size(); ++p) {
    std::memcpy(pool_rows_.data() + size_t{columns_[p]} * n_embd_, rows_.data() + p * n_embd_, n_embd_ * sizeof(float));
  }
  const double seconds = seconds_since(t0);
  times_.pool_s += seconds;
  ++times_.pool_layers;
  return seconds;
}

}  // namespace strata
