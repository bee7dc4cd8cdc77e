#include "strata/engine.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "hybrid_moe.hpp"
#include "route_record.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/slot_budget.hpp"
#include "strata/kv_cache.hpp"
#include "strata/tensor_role.hpp"
#include "../experts/human_bytes.hpp"

#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "strata/log.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"
#include "strata/route_profile.hpp"
#include "strata/startup_clock.hpp"

namespace strata {

EngineSettings settings_from(const config::Launch& launch) {
  EngineSettings s;
  s.context = static_cast<uint32_t>(launch.runtime.context);
  s.slots = static_cast<uint32_t>(launch.runtime.slots);
  // A window never holds more than the context: the activations are sized for it.
  s.batch = static_cast<uint32_t>(std::min(launch.runtime.batch, launch.runtime.context));
  s.kv_type = launch.runtime.kv_type == config::KvType::Q8_0 ? format::GgmlType::Q8_0 : format::GgmlType::F16;
  s.experts = launch.experts;
  s.threads = static_cast<unsigned>(launch.runtime.threads);
  s.graphs = launch.runtime.graphs;
  s.layer_split = static_cast<uint32_t>(launch.runtime.layer_split);
  s.gpu_memory = launch.runtime.gpu_memory;
  // Verify windows keep every token's logits: n_max drafts behind the pending token.
  if (launch.speculative.draft != config::DraftKind::Off) {
    s.max_window_logits = std::max<uint32_t>(s.max_window_logits, static_cast<uint32_t>(launch.speculative.n_max) + 1);
  }
  return s;
}

namespace {

bool has_routed_experts(const Model& model) {
  for (const LayerWeights& lw : model.weights().layers) {
    if (lw.has_experts() && lw.experts.gate != nullptr) return true;
  }
  return false;
}

// Device memory that only counts what is asked of it (its addresses are never touched): sizes the activations.
class CountingMemory final : public DeviceMemory {
 public:
  void* allocate(uint64_t bytes) override {
    bytes_ += bytes;
    return fake();
  }
  void* allocate_mapped(uint64_t) override { return fake(); }
  void release(void*) noexcept override {}
  uint64_t free_bytes() const override { return 0; }
  void upload(void*, const void*, uint64_t) override {}
  void download(void*, const void*, uint64_t) override {}
  const std::string& device_name() const override { return name_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void* fake() { return reinterpret_cast<void*>(next_ += 4096); }
  uint64_t bytes_ = 0;
  uintptr_t next_ = 0;
  std::string name_ = "sizing";
};

uint32_t logit_rows(const EngineSettings& s) { return std::max(s.max_window_logits, s.slots); }

// The activations' device bytes for these settings.
uint64_t activation_bytes(const Model& model, const EngineSettings& s) {
  CountingMemory counter;
  { const Activations a = model.make_activations(std::max<uint32_t>(s.batch, 1), logit_rows(s), &counter); }
  return counter.bytes();
}

// The layers whose KV cache the engine's own card holds.
uint32_t own_kv_layers(const Model& model, const EngineSettings& s) {
  const uint32_t n = model.hparams().n_layer;
  return s.layer_split > 0 && s.layer_split < n ? s.layer_split : n;
}

// "262144 tokens x 1 slot, q8_0"
std::string kv_shape(const EngineSettings& s) {
  return std::to_string(s.context) + " tokens x " + std::to_string(s.slots) + (s.slots == 1 ? " slot, " : " slots, ") +
         (s.kv_type == format::GgmlType::Q8_0 ? "q8_0" : "f16");
}

// What must fit on the engine's card before any expert slot, with the weights placed as `where`.
experts::DeviceRoom planned_room(const Model& model, const DeviceMemory& mem, const EngineSettings& s,
                                 WeightsOnDevice where) {
  experts::DeviceRoom room;
  room.free_bytes = mem.room_bytes();
  room.cap_bytes = mem.cap();
  if (where == WeightsOnDevice::All && s.layer_split == 0) {
    room.dense_bytes = model.file_bytes();
  } else {
    const uint32_t own = own_kv_layers(model, s);
    for (const gguf::TensorView& t : model.file().tensors()) {
      const TensorRole role = classify_tensor(t.name);
      if (role.part == TensorPart::RoutedExperts && where == WeightsOnDevice::Dense) continue;
      if (role.layer && static_cast<uint32_t>(*role.layer) >= own) continue;
      room.dense_bytes += t.n_bytes;
    }
  }
  room.kv_bytes = KvCache::bytes_for(own_kv_layers(model, s), model.kv_dim(), s.context, s.slots, s.kv_type,
                                     model.kv_value_view());
  room.kv_what = kv_shape(s);
  room.activation_bytes = activation_bytes(model, s);
  return room;
}

// Where the weights go: nowhere (a CPU backend), all to the device, or all but the routed experts (the hybrid
// path: experts.cache set, or `auto` and the whole model with its KV cache does not fit). Marks the device's memory
// (runtime.gpu_memory's cap, counted from here) and throws strata::Error, naming the parts and the fixes, when what
// must be on the device does not fit there.
std::optional<WeightsOnDevice> weights_placement(const Model& model, Backend& backend, const EngineSettings& s,
                                                 bool say_why = false) {
  DeviceMemory* mem = backend.device_memory();
  if (mem == nullptr) return std::nullopt;
  mem->cap_at(s.gpu_memory);
  if (backend.device_queues() == nullptr || !has_routed_experts(model)) {
    // Every weight on the device: refused only when it certainly does not fit (no margin asked).
    experts::DeviceRoom room = planned_room(model, *mem, s, WeightsOnDevice::All);
    room.margin_bytes = 0;
    experts::check_room(room, "the model on " + mem->device_name(), false);
    return WeightsOnDevice::All;
  }
  if (s.experts.cache.kind == config::CacheSize::Kind::Auto) {
    experts::DeviceRoom all = planned_room(model, *mem, s, WeightsOnDevice::All);
    all.margin_bytes = uint64_t{1} << 30;  // activations' scratch, the runtime's own
    if (all.reserved_bytes() <= all.free_bytes) return WeightsOnDevice::All;
    if (say_why)
      log::info("the model (" + experts::human_bytes(model.file_bytes()) + ") and its KV cache (" +
                experts::human_bytes(all.kv_bytes) + ", " + all.kv_what + ") do not fit in " +
                experts::human_bytes(all.free_bytes) + " of " + mem->device_name() +
                (all.cap_bytes > 0 ? " (runtime.gpu_memory)" : "") +
                ": routed experts take the hybrid path (experts.cache: auto)");
  }
  experts::check_room(planned_room(model, *mem, s, WeightsOnDevice::Dense), "experts.cache");
  return WeightsOnDevice::Dense;
}

// Whether the backend runs the ops of a device program that waits for its host (COPY, SIGNAL, WAIT on mapped
// flags): the hybrid path's fast mode.
bool runs_programs(Backend& backend, DeviceMemory& mem) {
  Buffer<int32_t> flags = Buffer<int32_t>::mapped(2, mem);
  strata_op ops[3] = {new_op(STRATA_OP_COPY), new_op(STRATA_OP_SIGNAL), new_op(STRATA_OP_WAIT)};
  ops[0].src[0] = tensor_i32(flags.data(), {1});
  ops[0].dst = tensor_i32(flags.data() + 1, {1});
  ops[1].dst = tensor_i32(flags.data(), {1});
  ops[2].src[0] = tensor_i32(flags.data(), {1});
  return backend.supports(ops[0]) && backend.supports(ops[1]) && backend.supports(ops[2]);
}

// The first usable plugin that provides `family` and that the launch does not switch off; a plugin the launch does
// not name counts as on only when `on_by_default` (a backend's expert pool; not a feature such as the balancer).
const PluginCandidate* first_enabled(const PluginRegistry& registry, const config::Launch& launch, const char* family,
                                     bool on_by_default) {
  for (const PluginCandidate& c : registry.candidates()) {
    if (c.verdict != PluginCandidate::Verdict::Usable || c.families.find(family) == std::string::npos) continue;
    const config::PluginEntry* entry = launch.plugin(c.name);
    if (entry != nullptr ? entry->enabled : on_by_default) return &c;
  }
  return nullptr;
}

unsigned thread_count(const EngineSettings& s) {
  return s.threads > 0 ? s.threads : std::max(1u, std::thread::hardware_concurrency());
}

// runtime.layer_split's first card: layers [0, K), checked against the model and the second card.
LayerRange first_card_layers(const EngineSettings& s, const Model& model, Backend& backend, Backend* second) {
  if (s.layer_split == 0) return {};
  const std::string k = "runtime.layer_split " + std::to_string(s.layer_split);
  const uint32_t n = model.hparams().n_layer;
  if (backend.device_queues() == nullptr || second == nullptr) {
    throw Error(k + " splits the layers between two GPUs: it needs a GPU backend (cuda, hip) and the second card in "
                "runtime.peer_device (the engine's own GPU gives a second logical device)");
  }
  if (s.layer_split >= n) {
    throw Error(k + " leaves no layer for the second card: this model has " + std::to_string(n) +
                " layers; give 1 to " + std::to_string(n - 1));
  }
  return {0, s.layer_split};
}

// The experts section each card of a layer split plans with: a percent cache is a share of the whole model's routed
// bytes (each card gets that many bytes for its own layers' experts), as it is for one card.
config::ExpertsConfig card_experts(const EngineSettings& s, const Model& model) {
  config::ExpertsConfig e = s.experts;
  if (s.layer_split > 0 && e.cache.kind == config::CacheSize::Kind::Percent) {
    const uint64_t routed = experts::expert_geometry(model.weights()).routed_bytes();
    e.cache.kind = config::CacheSize::Kind::Bytes;
    e.cache.bytes = static_cast<uint64_t>(std::llround(e.cache.percent / 100.0 * static_cast<double>(routed)));
  }
  return e;
}

ExpertPoolRef pool_ref_of(PluginInstance* plugin) {
  ExpertPoolRef pool_ref;
  if (plugin != nullptr) {
    pool_ref.table = plugin->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
    pool_ref.ctx = plugin->ctx();
    pool_ref.name = plugin->name();
  }
  return pool_ref;
}

}  // namespace

// The second card of a layer split: layers [layer_split, n_layer) with their own weights, KV cache, activations and
// hybrid path (sharing the first card's host arena and CPU pool).
struct Engine::SecondCard {
  LayerRange layers;
  std::unique_ptr<DeviceWeights> weights;
  std::unique_ptr<KvCache> kv;
  Activations act;
  std::unique_ptr<HybridMoe> hybrid;  // destroyed first
  std::vector<float> handover;        // the residual stream on its way from the first card, in host memory
};

Engine::Engine(std::unique_ptr<Model> model, std::unique_ptr<Backend> backend, const EngineSettings& settings,
               std::unique_ptr<PluginInstance> pool, std::unique_ptr<PluginInstance> balancer,
               std::unique_ptr<Backend> peer, EngineLink link)
    : pool_plugin_(std::move(pool)),
      balancer_plugin_(std::move(balancer)),
      model_(std::move(model)),
      backend_(std::move(backend)),
      peer_backend_(std::move(peer)),
      link_(std::move(link)),
      settings_(settings),
      first_layers_(first_card_layers(settings_, *model_, *backend_, peer_backend_.get())),
      device_weights_([&]() -> std::unique_ptr<DeviceWeights> {
        const auto where = weights_placement(*model_, *backend_, settings_, true);
        if (!where) return nullptr;
        startup::Phase timing("weights");  // to the device
        return std::make_unique<DeviceWeights>(*model_, *backend_->device_memory(), *where, first_layers_);
      }()),
      kv_(model_->hparams().n_layer, model_->kv_dim(), settings.context, settings.slots, settings.kv_type,
          backend_->device_memory(), 0, first_layers_.end, model_->kv_value_view()),
      act_(model_->make_activations(std::max<uint32_t>(settings.batch, 1), logit_rows(settings),
                                    backend_->device_memory())) {
  if (peer_backend_ != nullptr && peer_backend_->device_memory() != nullptr)
    peer_backend_->device_memory()->cap_at(settings_.gpu_memory);
  const bool split = settings_.layer_split > 0;
  const bool hybrid = device_weights_ != nullptr && device_weights_->which() == WeightsOnDevice::Dense;
  settings_.experts.profile = resolve_profile(settings_.experts.profile, *model_, hybrid);  // `auto`, and checked
  if (!hybrid && !split && peer_backend_ != nullptr) {
    log::warn("runtime.peer_device: unused, because every weight is on " + backend_->describe() +
              " (the peer card is an expert tier of the hybrid path); set experts.cache to a share to use it");
    peer_backend_.reset();
  }
  if (link_ && (!hybrid || split)) {
    throw Error("the peer link (plugins: peerlink) joins two engines' hybrid paths: it needs a GPU backend with "
                "experts.cache set to a share, and no runtime.layer_split; switch the link off or set experts.cache");
  }
  const config::ExpertsConfig experts = card_experts(settings_, *model_);
  // A card's hybrid path, its expert tables given the card's copies of the expert forms (gpt-oss's biases).
  const auto make_hybrid = [&](Backend& b, Activations& act, BalancerRef card_balancer, HybridCards cards,
                               const DeviceWeights& weights) {
    DeviceMemory& mem = *b.device_memory();
    // The host reads the router's choices every layer: in mapped memory they need no copy.
    act.expert_ids = Buffer<int32_t>::mapped(act.expert_ids.size(), mem);
    act.expert_weights = Buffer<float>::mapped(act.expert_weights.size(), mem);
    auto h = std::make_unique<HybridMoe>(*model_, act, mem, *b.device_queues(), experts, pool_ref_of(pool_plugin_.get()),
                                         std::move(card_balancer), std::max<uint32_t>(settings_.batch, 1),
                                         thread_count(settings_), settings_.graphs && runs_programs(b, mem),
                                         [pb = &b](const strata_op& op) { return pb->supports(op); }, std::move(cards));
    h->use_expert_forms(weights);
    log::info(h->describe());
    return h;
  };
  if (hybrid) {
    BalancerRef balancer_ref;
    if (balancer_plugin_ != nullptr) {
      balancer_ref.table = balancer_plugin_->get<strata_balancer_v1>(STRATA_BALANCER_FAMILY, STRATA_BALANCER_VERSION);
      balancer_ref.ctx = balancer_plugin_->ctx();
      balancer_ref.name = balancer_plugin_->name();
    }
    HybridCards cards{split ? nullptr : peer_backend_.get(), first_layers_, nullptr};
    if (link_) {
      link_tier_ = std::make_unique<LinkTier>(*link_.plugin, *model_, HybridMoe::kPoolMaxTokens,
                                              gate::identify(*model_).header_hash);
      cards.link = link_tier_.get();
      cards.link_role = link_.role;
      cards.link_device = link_.service.get();
    }
    hybrid_ = make_hybrid(*backend_, act_, balancer_ref, cards, *device_weights_);
    // How the card's room was split: what the engine could place when it started, what it placed, and the slots.
    const DeviceMemory& mem = *backend_->device_memory();
    const experts::SlotBudget& slots = hybrid_->cache().budget();
    experts::DeviceRoom room;
    room.free_bytes = mem.room_at_mark();
    room.cap_bytes = mem.cap();
    room.dense_bytes = device_weights_->bytes();
    room.kv_bytes = kv_.bytes();
    room.kv_what = kv_shape(settings_);
    room.activation_bytes = activation_bytes(*model_, settings_);
    const uint64_t accounted = room.dense_bytes + room.kv_bytes + room.activation_bytes + slots.used_bytes;
    room.staging_bytes = mem.placed_bytes() > accounted ? mem.placed_bytes() - accounted : 0;
    log::info(experts::describe_split(experts.cache, room, slots));
  }
  if (!split) {
    start_record();
    return;
  }
  // The second card: the same placement (all weights, or the hybrid path) for layers K and up.
  DeviceMemory& mem = *peer_backend_->device_memory();
  const uint32_t n_layer = model_->hparams().n_layer;
  second_ = std::make_unique<SecondCard>();
  second_->layers = LayerRange{settings_.layer_split, UINT32_MAX};
  second_->weights = std::make_unique<DeviceWeights>(
      *model_, mem, hybrid ? WeightsOnDevice::Dense : WeightsOnDevice::All, second_->layers);
  second_->kv = std::make_unique<KvCache>(n_layer, model_->kv_dim(), settings.context, settings.slots, settings.kv_type,
                                          &mem, settings_.layer_split, n_layer - settings_.layer_split,
                                          model_->kv_value_view());
  second_->act = model_->make_activations(std::max<uint32_t>(settings.batch, 1), logit_rows(settings), &mem);
  if (hybrid) {
    second_->hybrid = make_hybrid(*peer_backend_, second_->act, BalancerRef{},
                                  HybridCards{nullptr, second_->layers, hybrid_->shared_arena()}, *second_->weights);
  }
  log::info("layer split: layers 0.." + std::to_string(settings_.layer_split - 1) + " on " + backend_->describe() +
            ", layers " + std::to_string(settings_.layer_split) + ".." + std::to_string(n_layer - 1) + " on " +
            peer_backend_->describe() + "; the residual stream crosses through host memory once a window");
  start_record();
}

void Engine::start_record() {
  if (settings_.experts.record) recorder_ = std::make_unique<RouteRecorder>(*this, *settings_.experts.record);
}

Engine::Card Engine::first_card() {
  return Card{backend_.get(), first_layers_, device_weights_.get(), &kv_, &act_, hybrid_.get()};
}

Activations& Engine::head_act() { return second_ ? second_->act : act_; }

void Engine::cut(uint32_t slot, uint32_t position) {
  kv_.cut(slot, position);
  if (second_) second_->kv->cut(slot, position);
  if (slot < images_.size()) std::erase_if(images_[slot], [&](const ImageSpan& s) { return s.column >= position; });
}

int32_t Engine::rope_shift(uint32_t slot) const {
  int32_t shift = 0;
  if (slot < images_.size()) {
    for (const ImageSpan& s : images_[slot]) shift += static_cast<int32_t>(s.n) - static_cast<int32_t>(s.advance);
  }
  return shift;
}

std::span<const float> Engine::feed_image(uint32_t slot, const ImageTokens& image) {
  if (!model_->mrope()) {
    throw Error("images need a Qwen3-VL model (qwen3vlmoe); " + model_->file().name() + " is " +
                std::string(arch_name(model_->hparams().arch)));
  }
  const uint32_t n = image.nx * image.ny;
  const size_t width = model_->input_width();
  if (n == 0 || image.rows.size() != size_t{n} * width || image.advance == 0) {
    throw Error("feed_image: " + std::to_string(image.rows.size()) + " floats for a " + std::to_string(image.nx) +
                " x " + std::to_string(image.ny) + " grid; expected " + std::to_string(size_t{n} * width) + " (" +
                std::to_string(width) + " per token) and a positive advance");
  }
  if (slot >= settings_.slots) throw Error("feed_image: slot " + std::to_string(slot) + " does not exist");
  const uint32_t column = kv_.length(slot);
  kv_.check_window(slot, column, n);
  const auto p0 = static_cast<int32_t>(column) - rope_shift(slot);
  const std::vector<TokenId> placeholders(std::min<size_t>(n, settings_.batch), 0);
  std::vector<int32_t> pos;
  for (uint32_t start = 0; start < n; start += settings_.batch) {
    const uint32_t m = std::min<uint32_t>(settings_.batch, n - start);
    pos.assign(4 * size_t{m}, 0);
    for (uint32_t i = 0; i < m; ++i) {
      const uint32_t k = start + i;
      pos[i] = p0;
      pos[m + i] = p0 + static_cast<int32_t>(k / image.nx);
      pos[2 * size_t{m} + i] = p0 + static_cast<int32_t>(k % image.nx);
    }
    Window w{std::span<const TokenId>(placeholders.data(), m), kv_.length(slot), slot, false};
    w.embeddings = image.rows.subspan(size_t{start} * width, size_t{m} * width);
    w.mrope_positions = pos;
    run(w);
  }
  if (images_.size() < settings_.slots) images_.resize(settings_.slots);
  images_[slot].push_back(ImageSpan{column, n, image.advance});
  return head_act().read_logits(model_->hparams().n_vocab, 1);
}

void Engine::reset_expert_counts() {
  std::unique_lock<std::mutex> record_lock;
  if (recorder_) {
    record_lock = std::unique_lock<std::mutex>(recorder_->counts_lock());
    recorder_->fold();  // experts.record counts the whole run
  }
  if (hybrid_) hybrid_->reset_counts();
  if (second_ && second_->hybrid) second_->hybrid->reset_counts();
  std::fill(act_.route_counts.begin(), act_.route_counts.end(), 0);
}

ExpertUsage Engine::expert_usage() const {
  ExpertUsage u;
  // Each card's hybrid path counts its own layers' routes (both, on a layer split).
  for (const HybridMoe* h : {hybrid_.get(), second_ ? second_->hybrid.get() : nullptr}) {
    if (h == nullptr) continue;
    const experts::ExpertStats& stats = h->cache().stats();
    u.n_layer = stats.keys.n_layer;
    u.n_expert = stats.keys.n_expert;
    u.routed.resize(stats.experts.size());
    u.hits.resize(stats.experts.size());
    for (size_t i = 0; i < stats.experts.size(); ++i) {
      u.routed[i] += stats.experts[i].hit_tokens + stats.experts[i].miss_tokens;
      u.hits[i] += stats.experts[i].hit_tokens;
    }
  }
  if (u.n_layer == 0 && !act_.route_counts.empty() && device_weights_ == nullptr) {
    u.n_layer = model_->hparams().n_layer;
    u.n_expert = model_->hparams().n_expert;
    u.routed = act_.route_counts;
  }
  return u;
}

bool Engine::set_request_pcie_frac(std::optional<double> frac) {
  if (frac && !(*frac >= 0.0 && *frac <= 1.0)) {
    throw Error("pcie_frac must be between 0 and 1 (the share of a layer's missed experts read over PCIe)");
  }
  const bool second = second_ && second_->hybrid;
  if (!hybrid_ && !second) return false;
  if (hybrid_) hybrid_->set_request_pcie_frac(frac);
  if (second) second_->hybrid->set_request_pcie_frac(frac);
  return true;
}

namespace {

PeerTier& peer_tier_of(HybridMoe* hybrid, bool has_second_card) {
  if (hybrid == nullptr || hybrid->peer() == nullptr) {
    throw Error("this engine has no peer card: " +
                std::string(!has_second_card ? "runtime.peer_device is -1"
                                             : "runtime.peer_device is a layer split's second card, or the engine takes "
                                               "no hybrid path (experts.cache)"));
  }
  return *hybrid->peer();
}

}  // namespace

std::string Engine::detach_peer() { return peer_tier_of(hybrid_.get(), peer_backend_ != nullptr).release(); }
std::string Engine::attach_peer() { return peer_tier_of(hybrid_.get(), peer_backend_ != nullptr).restore(); }

std::string Engine::serve_link(bool on) {
  if (!hybrid_ || hybrid_->link() == nullptr) {
    throw Error("no peer link: give --peer-link FILE --peer-link-role 0|1 (or plugins: peerlink: {enabled: true, file: "
                "..., role: ...}) on a GPU backend with experts.cache set");
  }
  LinkService* service = hybrid_->service();
  if (service == nullptr) throw Error("this engine has no device to serve the link on");
  if (service->serving() == on) throw Error(on ? "this engine serves the link already" : "this engine does not serve the link");
  service->set_serving(on);
  return on ? "this engine answers the other engine's requests for the experts its card holds (" + link_tier_->describe() + ")"
            : "this engine no longer answers the other engine's requests";
}

std::string Engine::hold_pool(uint32_t n) {
  if (pool_plugin_ == nullptr || (!hybrid_ && !(second_ && second_->hybrid))) {
    throw Error("this engine has no CPU expert pool (it takes no hybrid path: a GPU backend with experts.cache set)");
  }
  const auto* t = pool_plugin_->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
  const std::string& name = pool_plugin_->name();
  const bool has_limit = t->header.minor >= 1 &&
                         t->header.struct_size >= offsetof(strata_expert_pool_v1, set_worker_limit) + sizeof(void*) &&
                         t->set_worker_limit != nullptr;
  if (!has_limit) throw Error(name + " is older than expert_pool 1.1 and has no worker limit");
  void* ctx = pool_plugin_->ctx();
  const uint32_t before = t->worker_count(ctx);
  throw_if_error(t->set_worker_limit(ctx, n), name, "expert_pool.set_worker_limit");
  const uint32_t after = t->worker_count(ctx);
  return n == 0 ? "the CPU pool (" + name + ") uses all its " + std::to_string(after) + " workers again"
                : "the CPU pool (" + name + ") uses " + std::to_string(after) + " workers (was " + std::to_string(before) + ")";
}

std::string Engine::expert_summary(double decode_tokens_per_s) const {
  std::string out;
  if (hybrid_) out = hybrid_->summary(decode_tokens_per_s);
  if (second_ && second_->hybrid) {
    out += "second card (layers " + std::to_string(second_->layers.begin) + " and up):\n" +
           second_->hybrid->summary(decode_tokens_per_s);
  }
  return out;
}


Engine::~Engine() {
  if (recorder_) recorder_->finish();
}

std::unique_ptr<Engine> Engine::from_launch(const config::Launch& launch) {
  if (!launch.model) throw Error("no model: give --model FILE or set `model:` in the launch");
  const char* env_path = std::getenv("STRATA_PLUGIN_PATH");
  std::vector<std::filesystem::path> folders(launch.plugin_path.begin(), launch.plugin_path.end());
  auto registry = std::make_unique<PluginRegistry>(default_search_path(folders, env_path ? env_path : ""));
  std::unique_ptr<Backend> backend = [&] {
    startup::Phase timing("backend");  // the plugins' libraries and the device's start
    return select_backend(launch, *registry);
  }();
  std::unique_ptr<Model> model = [&] {
    startup::Phase timing("map");  // the file mapped, its header and tensors read
    return Model::load(*launch.model);
  }();
  const EngineSettings settings = settings_from(launch);
  // The hybrid path's CPU pool, only when the engine will take that path: the first usable plugin that provides the
  // expert_pool family (cpu_avx2). Without one every miss is read over PCIe.
  std::unique_ptr<PluginInstance> pool;
  if (weights_placement(*model, *backend, settings) == WeightsOnDevice::Dense) {
    if (const PluginCandidate* c = first_enabled(*registry, launch, "expert_pool", true)) {
      const config::PluginEntry* entry = launch.plugin(c->name);
      std::vector<std::string> options = entry != nullptr ? entry->flattened() : std::vector<std::string>{};
      // Fast mode runs a copy watcher beside the pool that polls while copies are in flight: cpu_avx2's
      // workers: auto leaves it a core (reserve=1), unless the launch says otherwise. The placer is the pool's
      // calling thread, which the pool already counts.
      const bool reserve_given = std::any_of(options.begin(), options.end(),
                                             [](const std::string& o) { return o.rfind("reserve=", 0) == 0; });
      if (settings.graphs && c->name == "cpu_avx2" && !reserve_given) options.push_back("reserve=1");
      pool = registry->instantiate(c->name, options);
    }
  }
  // The balancer (pcie_balance): only where it is switched on (off by default), with a pool to balance against, one
  // sequence slot and no pcie_frac set by hand.
  std::unique_ptr<PluginInstance> balancer;
  if (const PluginCandidate* c = first_enabled(*registry, launch, "balancer", false)) {
    if (pool == nullptr) {
      log::warn(c->name + ": unused: it balances the hybrid path's misses between PCIe and the CPU pool, and this "
                "launch has no hybrid path (a GPU backend with experts.cache set, or a model larger than VRAM) or no pool");
    } else if (settings.experts.pcie_frac) {
      log::warn(c->name + ": off, because experts.pcie_frac is set (" + std::to_string(*settings.experts.pcie_frac) +
                "); leave it unset (auto) to let the balancer choose each layer's share");
    } else if (settings.slots > 1) {
      log::warn(c->name + ": off with runtime.slots " + std::to_string(settings.slots) + " (it balances one sequence)");
    } else {
      balancer = registry->instantiate(c->name, launch.plugin(c->name)->flattened());
    }
  }
  // The peer card: a second instance of the same backend plugin on runtime.peer_device (which may be the engine's own
  // GPU: a second logical device, so that every path runs on a one-GPU machine).
  std::unique_ptr<Backend> peer;
  if (launch.runtime.peer_device >= 0) {
    if (backend->device_queues() == nullptr) {
      throw Error("runtime.peer_device " + std::to_string(launch.runtime.peer_device) + " needs a GPU backend (cuda, hip); " +
                  "this launch runs on " + backend->name() + ": set backend to cuda or runtime.peer_device to -1");
    }
    std::vector<std::string> options = backend_options(launch, backend->name());
    std::erase_if(options, [](const std::string& o) { return o.rfind("device=", 0) == 0; });
    options.push_back("device=" + std::to_string(launch.runtime.peer_device));
    peer = make_plugin_backend(registry->instantiate(backend->name(), options));
    log::info("peer card: " + peer->describe());
  }
  // The peer link (peerlink): off unless the launch switches it on. The service computes on a second instance of the
  // engine's backend on the same card (the same options, so the same device), with its own streams.
  EngineLink link;
  if (const PluginCandidate* c = first_enabled(*registry, launch, "link", false)) {
    if (pool == nullptr) {
      throw Error(c->name + " (the peer link) joins two engines' hybrid paths, and this launch has none or no CPU pool: "
                  "use a GPU backend (cuda, hip) with experts.cache set to a share, or switch " + c->name + " off");
    }
    const std::vector<std::string> options = launch.plugin(c->name)->flattened();
    for (const std::string& o : options) {
      if (o == "role=1") link.role = 1;
    }
    link.plugin = registry->instantiate(c->name, options);
    std::vector<std::string> service_options = backend_options(launch, backend->name());
    std::erase_if(service_options, [](const std::string& o) { return o.rfind("priority=", 0) == 0; });
    service_options.push_back("priority=high");  // the other engine waits on each of its ops
    try {
      link.service = make_plugin_backend(registry->instantiate(backend->name(), service_options));
    } catch (const Error& e) {
      // A backend without stream priorities serves on a stream like any other.
      log::info(std::string("peer link: the service's stream has the default priority (") + e.what() + ")");
      service_options.pop_back();
      link.service = make_plugin_backend(registry->instantiate(backend->name(), service_options));
    }
  }
  auto engine = std::make_unique<Engine>(std::move(model), std::move(backend), settings, std::move(pool), std::move(balancer),
                                         std::move(peer), std::move(link));
  engine->registry_ = std::move(registry);
  log::info("backend: " + engine->backend_->describe());
  startup::mark_ready();
  return engine;
}

void Engine::run(const Window& given) {
  // M-RoPE text windows: each token's t (= row = column) is its cache position less its slot's image shift.
  std::vector<int32_t> mrope;
  Window w = given;
  if (model_->mrope() && w.mrope_positions.empty()) {
    const size_t n = w.tokens.size();
    mrope.assign(4 * n, 0);
    for (const SlotRun& r : w.slot_runs()) {
      const int32_t shift = rope_shift(r.slot);
      for (uint32_t i = 0; i < r.n; ++i) {
        const int32_t p = static_cast<int32_t>(r.first_position + i) - shift;
        mrope[r.column + i] = mrope[n + r.column + i] = mrope[2 * n + r.column + i] = p;
      }
    }
    w.mrope_positions = mrope;
  }
  std::unique_lock<std::mutex> record_lock;
  if (recorder_) record_lock = std::unique_lock<std::mutex>(recorder_->counts_lock());
  const std::vector<SlotRun> runs = w.slot_runs();
  for (const SlotRun& r : runs) kv_.check_window(r.slot, r.first_position, r.n);
  run_card(first_card(), w);
  if (second_) {
    // The residual stream crosses to the second card through host memory; its layers go on from there.
    const size_t bytes = size_t{model_->hparams().n_embd} * w.tokens.size() * sizeof(float);
    second_->handover.resize(bytes / sizeof(float));
    backend_->device_memory()->download(second_->handover.data(), act_.x.data(), bytes);
    peer_backend_->device_memory()->upload(second_->act.x.data(), second_->handover.data(), bytes);
    run_card(Card{peer_backend_.get(), second_->layers, second_->weights.get(), second_->kv.get(), &second_->act,
                  second_->hybrid.get()},
             w);
  }
  for (const SlotRun& r : runs) {
    kv_.set_length(r.slot, r.first_position + r.n);
    if (second_) second_->kv->set_length(r.slot, r.first_position + r.n);
  }
}

void Engine::run_card(const Card& card, const Window& w) {
  const auto n_tok = static_cast<uint32_t>(w.tokens.size());
  HybridMoe* const hybrid = card.hybrid;
  // Ops profiled one at a time cannot wait for the host inside a program: profiling takes simple mode.
  if (hybrid) hybrid->begin_window(n_tok, profile_ == nullptr);
  const std::vector<Stage> stages = model_->build_window(w, *card.act, *card.kv, card.weights, hybrid, card.layers);
  if (hybrid && hybrid->one_program(n_tok)) {
    if (stages.size() != 1 || stages.front().host) throw Error("internal: a one-program window has host steps");
    hybrid->run_program(stages.front().ops, n_tok);
  } else if (profile_ != nullptr) {
    run_profiled(*card.backend, stages);
  } else {
    for (const Stage& s : stages) {
      if (hybrid && s.host) {
        hybrid->run_stage(s.ops, n_tok);  // a MoE layer's placement follows
      } else {
        card.backend->compute(s.ops);
      }
      if (s.host) s.host();
    }
  }
  if (hybrid) hybrid->end_window();
}

void Engine::run_profiled(Backend& backend, const std::vector<Stage>& stages) {
  using clock = std::chrono::steady_clock;
  for (const Stage& s : stages) {
    compute_profiled(backend, s.ops, *profile_);
    if (s.host) {
      const auto t0 = clock::now();
      s.host();
      profile_->add_host(std::chrono::duration<double>(clock::now() - t0).count());
    }
  }
}

std::span<const float> Engine::feed(uint32_t slot, std::span<const TokenId> tokens) {
  if (tokens.empty()) throw Error("feed: no tokens");
  for (size_t start = 0; start < tokens.size(); start += settings_.batch) {
    const size_t n = std::min<size_t>(settings_.batch, tokens.size() - start);
    run(Window{tokens.subspan(start, n), kv_.length(slot), slot, false});
  }
  return head_act().read_logits(model_->hparams().n_vocab, 1);
}

std::span<const float> Engine::step(std::span<const SlotToken> next) {
  if (next.empty()) throw Error("step: no sequences");
  if (next.size() > act_.max_logit_rows) {
    throw Error("step: " + std::to_string(next.size()) + " sequences; a step holds 1 to " +
                std::to_string(act_.max_logit_rows) + " (runtime.slots)");
  }
  std::vector<TokenId> tokens;
  std::vector<SlotRun> runs;
  for (const SlotToken& s : next) {
    if (s.slot >= settings_.slots) {
      throw Error("step: slot " + std::to_string(s.slot) + " is not one of the engine's " +
                  std::to_string(settings_.slots) + " (runtime.slots)");
    }
    runs.push_back(SlotRun{s.slot, kv_.length(s.slot), static_cast<uint32_t>(tokens.size()), 1});
    tokens.push_back(s.token);
  }
  Window w{tokens, runs.front().first_position, runs.front().slot, true};
  if (runs.size() > 1) w.runs = runs;
  run(w);
  return head_act().read_logits(model_->hparams().n_vocab, tokens.size());
}

std::span<const float> Engine::feed_window(uint32_t slot, std::span<const TokenId> tokens) {
  if (tokens.empty() || tokens.size() > act_.max_logit_rows) {
    throw Error("feed_window: " + std::to_string(tokens.size()) +
                " tokens; a window with every token's logits holds 1 to " + std::to_string(act_.max_logit_rows));
  }
  run(Window{tokens, kv_.length(slot), slot, true});
  return head_act().read_logits(model_->hparams().n_vocab, tokens.size());
}

}  // namespace strata
