// The hybrid path's set-up (HybridMoe's constructor): the host arena (the first card's on a layer split's second, or
// filled and page-locked), the layers' expert tables, the staging slots and the prompt path's chunk buffers, the
// mapped buffers and flags the steps share, the cache's slots (this card's, or its dealt share beside the peer card
// or the link's other role) filled once, the share of misses read over PCIe (set, or from the link probe), the
// planner's tiers and the balancer's hook, and the prompt path's cut-over measured on the pool and the link.
#include "hybrid_moe.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "../experts/human_bytes.hpp"
#include "hybrid_step_support.hpp"
#include "strata/device_weights.hpp"
#include "strata/error.hpp"
#include "strata/experts/cache_setup.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/huge_pages.hpp"
#include "strata/experts/link_probe.hpp"
#include "strata/experts/link_share.hpp"
#include "strata/gate.hpp"
#include "strata/log.hpp"
#include "strata/startup_clock.hpp"
#include "strata/plugin_host.hpp"
#include "strata/tensor_role.hpp"

namespace strata {

void HybridMoe::use_expert_forms(const DeviceWeights& weights) {
  for (uint32_t il = 0; il < tables_.size(); ++il) {
    const strata_expert_form* form = weights.expert_form(il);
    if (form == nullptr || tables_[il].n_expert == 0) continue;
    if (peer_ || link_ != nullptr || service_) {
      throw Error(std::string("this model's experts have biases and a clamped SwiGLU (gpt-oss), which the ") +
                  (peer_ ? "peer card's tier (runtime.peer_device)" : "peer link (plugins: peerlink)") +
                  " does not carry yet; run without it");
    }
    tables_[il].form = form;
  }
}

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
    startup::Phase timing("host copy");  // the experts' arena filled (or mapped) and page-locked
    if (experts_cfg.host_copy_kind() == config::HostCopy::Arena) {
      arena_ = std::make_shared<experts::ExpertArena>(w, threads, experts_cfg.arena.value_or(""), who.header_hash);
      arena_lock_ = std::make_unique<HostRegistration>(queues, arena_->data(), arena_->size(), true);
      description_ = "experts in RAM: " + experts::human_bytes(arena_->size()) +
                     (arena_->file().empty() ? " of private memory" : " in " + arena_->file()) +
                     (arena_->filled() ? ", filled in " : ", found complete and mapped in ") +
                     std::to_string(arena_->fill_seconds()).substr(0, 4) + " s, " +
                     (arena_lock_->locked() ? "page-locked" : "pageable");
    } else {
      // The mapped GGUF is the host copy: no second copy of the experts. Its pages are read ahead while the
      // set-up goes on, when they fit in the memory available.
      arena_ = std::make_shared<experts::ExpertArena>(w, experts::ExpertArena::InFile{});
      const uint64_t advised = arena_->advise_willneed();
      description_ = "experts in RAM: the model file's own mapping (" + experts::human_bytes(arena_->size()) +
                     (advised > 0 ? ", read ahead" : "") + ")";
    }
  }
  // The file as the host copy: its expert pages in 2 MiB pages where the kernel allows (the CPU pool streams them on
  // every core; docs/ARCHITECTURE.md, "Huge pages"). Before the registration below: pinned pages cannot be collapsed.
  // Said after the registration's line, with what the page tables then map with 2 MiB entries.
  std::string huge_pages;
  const bool in_shmem = experts::ExpertArena::on_tmpfs(model_.file().name());  // the model file on tmpfs
  if (!cards.arena && !arena_->contiguous()) {
    startup::Phase timing("huge pages");
    if (experts_cfg.huge_pages) {
      huge_pages = experts::advise_huge_pages(arena_->ranges(), threads, in_shmem).describe();
    } else {
      huge_pages = "huge pages off (experts.huge_pages false): " +
                   experts::human_bytes(experts::advise_small_pages(arena_->ranges())) + " marked for 4 KiB pages";
    }
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
                                      device_entries_[il].data(), nullptr};
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
  room.free_bytes = mem.room_bytes();  // under runtime.gpu_memory, its cap less what the engine placed
  room.cap_bytes = mem.cap();
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
  {
    // The uploads from the host copy (its pinned ring is host memory: made after the slots' room is planned).
    startup::Phase timing("host copy");  // registering pieces of the mapping, when asked
    ExpertUpload::Options upload_options;
    // auto: the file's expert pages page-locked when they fit in memory (PCIe then reads them directly: on the H100
    // host 2.3x the 235B shape's decode at 10% over staging them); a model larger than the RAM stays staged.
    const config::HostCopy kind = experts_cfg.host_copy_kind();
    const bool fits = kind == config::HostCopy::Auto && arena_->fits_in_memory(in_shmem);
    upload_options.register_file = kind == config::HostCopy::FileRegistered || fits;
    if (kind == config::HostCopy::Auto) {
      description_ += fits ? " (host_copy auto: registered, the experts fit in memory)"
                           : " (host_copy auto: staged, the experts do not fit in memory)";
    }
    // Up to 8 threads fill the ring for prompt windows (the host read 61 GB/s on 16 threads on the H100 host,
    // about 7.5 GB/s a thread, against a 52 GB/s link).
    upload_options.fill_threads = std::clamp(threads, 1u, 8u);
    upload_ = std::make_unique<ExpertUpload>(*arena_, mem, queues, upload_options);
    description_ += ", " + upload_->describe();
    if (!huge_pages.empty()) {
      // What the page tables map with 2 MiB entries now (registration faulted every registered page in).
      description_ += "; " + huge_pages + "; " + experts::human_bytes(experts::huge_mapped_bytes(arena_->ranges())) +
                      " of the file's mappings in 2 MiB page-table entries";
    }
  }
  const auto t_fill = clock_type::now();
  own_slots_.queue_fill(*cache_, *upload_, copy_stream_->get());
  queues.record(copies_done_->get(), copy_stream_->get());
  queues.synchronize(copies_done_->get());
  startup::add("cache fill", seconds_since(t_fill));
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
    startup::Phase timing("probe");  // the link, the host's read rate, the device's copy rate
    const experts::LinkMeasure link = experts::probe_link(mem, queues);
    rates_.h2d = link.h2d_bytes_per_s;
    std::string staged;
    if (!arena_->contiguous() && !moe_layers_.empty()) {
      // Copies from the file go through the pinned ring: the link's rate for them is what the ring delivers.
      const double ring = measure_upload(moe_layers_.front());
      if (ring > 0 && ring < rates_.h2d) rates_.h2d = ring;
      staged = "; PCIe reads from the file " + std::to_string(ring / 1e9).substr(0, 5) + " GB/s through the ring";
    }
    // 512 MiB: past the largest server caches (320 MB), half the start-up cost of a GiB.
    rates_.cpu_read = experts::measure_host_read(std::max(1u, threads), uint64_t{512} << 20);
    rates_.hbm = experts::measure_device_copy(mem, queues);
    if (!moe_layers_.empty()) rates_.pool = measure_pool(moe_layers_.front());
    frac = experts::default_pcie_frac(rates_.h2d, rates_.pool_rate(), geometry.routed_bytes() / std::max<uint64_t>(n_experts, 1),
                                      link.copy_overhead_s);
    description_ += "; pcie_frac " + std::to_string(frac).substr(0, 5) + " from the link probe (" + experts::describe(link) +
                    "; host read " + std::to_string(rates_.cpu_read / 1e9).substr(0, 6) + " GB/s with " +
                    std::to_string(threads) + " threads; the pool on this model's experts " +
                    std::to_string(rates_.pool / 1e9).substr(0, 6) + " GB/s; device copy " +
                    std::to_string(rates_.hbm / 1e9).substr(0, 7) + " GB/s" + staged + ")";
  }
  // worker_count counts every thread that computes, the calling one (the placer) included; a 1.2 pool says why.
  if (pool_) {
    const strata_expert_pool_v1& t = *pool_.table;
    const bool described = t.header.minor >= 2 &&
                           t.header.struct_size >= offsetof(strata_expert_pool_v1, describe) + sizeof(void*) &&
                           t.describe != nullptr;
    description_ += "; CPU pool: " + pool_.name + " (" +
                    (described ? std::string(t.describe(pool_.ctx))
                               : std::to_string(t.worker_count(pool_.ctx)) + " threads, the calling one included") +
                    ")";
  }
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
  if (pool_ && !moe_layers_.empty()) {
    startup::Phase timing("cutover");  // the pool against one expert's PCIe read
    description_ += "; " + choose_cutover(moe_layers_.front());
  }
}

double HybridMoe::measure_upload(uint32_t il) {
  // Layer il's experts in turn into the first staging slot, up to 256 MiB, once to warm up and once timed.
  const uint32_t n = tables_[il].n_expert;
  const uint64_t bytes = arena_->layout(il).bytes;
  if (n == 0 || bytes == 0) return 0;
  const uint32_t count = static_cast<uint32_t>(std::clamp<uint64_t>((uint64_t{256} << 20) / bytes, 1, n));
  double seconds = 0;
  for (int rep = 0; rep < 2; ++rep) {
    const auto t0 = clock_type::now();
    for (uint32_t e = 0; e < count; ++e) upload_->copy(staging_.data(), il, e, copy_stream_->get());
    queues_.record(copies_done_->get(), copy_stream_->get());
    queues_.synchronize(copies_done_->get());
    seconds = seconds_since(t0);
  }
  return seconds > 0 ? static_cast<double>(count * bytes) / seconds : 0;
}

double HybridMoe::time_pool_call(uint32_t il, const std::vector<uint32_t>& ids, uint32_t n_tok) {
  // Every token routed to every expert (ids ascending), inputs of a fixed pattern, weights 1.
  const LayerWeights& lw = model_.weights().layers[il];
  const auto n = static_cast<uint32_t>(ids.size());
  std::vector<float> x(size_t{n_embd_} * n_tok), rows(size_t{n_embd_} * n_tok * n), weight(size_t{n_tok} * n, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2001) / 1000.0f - 1.0f;
  std::vector<uint32_t> offsets(n + 1), index(size_t{n_tok} * n);
  std::vector<strata_expert_weights> w(n);
  for (uint32_t e = 0; e <= n; ++e) offsets[e] = e * n_tok;
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<uint32_t>(i % n_tok);
  for (uint32_t e = 0; e < n; ++e) w[e] = arena_->weights(il, ids[e]);
  const strata_moe_op m{n_embd_, lw.experts.n_ff, n_tok, n, ids.data(), w.data(), offsets.data(), index.data(),
                        weight.data(), x.data(), rows.data(), lw.experts.form()};
  const auto t0 = clock_type::now();
  throw_if_error(pool_.table->compute(pool_.ctx, &m, nullptr, 0), pool_.name, "expert_pool.compute");
  return seconds_since(t0);
}

double HybridMoe::measure_pool(uint32_t il) {
  // Up to 8 experts of the layer in one call, one token each (a decode layer's misses): a warm-up call, then the
  // best of three calls on other experts each (so that no timed call finds its weights in the caches): the experts'
  // bytes over the time.
  const uint32_t n_expert = tables_[il].n_expert, n = std::min<uint32_t>(8, n_expert);
  if (n == 0) return 0;
  double best = 1e9;
  for (uint32_t call = 0; call < 4; ++call) {
    std::vector<uint32_t> ids(n);
    for (uint32_t e = 0; e < n; ++e) ids[e] = (call * n + e) % n_expert;
    std::sort(ids.begin(), ids.end());  // a moe op's experts ascend
    const double seconds = time_pool_call(il, ids, 1);
    if (call > 0) best = std::min(best, seconds);
  }
  return best > 0 ? static_cast<double>(n) * static_cast<double>(arena_->layout(il).bytes) / best : 0;
}

std::string HybridMoe::choose_cutover(uint32_t il) {
  const uint32_t n_max = kPoolMaxTokens;
  // The pool on expert 0 with every token of a window routed to it, best of three (the first warms it up).
  const auto pool_time = [&](uint32_t n) {
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) best = std::min(best, time_pool_call(il, {0}, n));
    return best;
  };
  const double pool_1 = pool_time(1), pool_n = pool_time(n_max);
  // One expert over the link into a staging slot, best of three.
  double link = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clock_type::now();
    upload_->copy(staging_.data(), il, 0, copy_stream_->get());
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

}  // namespace strata
