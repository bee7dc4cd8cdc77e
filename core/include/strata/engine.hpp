// The engine: a model, its KV cache and a backend, running windows of tokens. A prompt is fed in chunks of
// runtime.batch tokens and each decoded token as a window of one; both take the same path (Model::build_window,
// then each stage's ops on the backend and its host step).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/config.hpp"
#include "strata/device_weights.hpp"
#include "strata/format/types.hpp"
#include "strata/kv_cache.hpp"
#include "strata/model.hpp"
#include "strata/op_profile.hpp"

namespace strata {

class HybridMoe;
class LinkTier;
class PluginInstance;
class RouteRecorder;

// The peer link to another engine process (plugins: peerlink), for the engine's hybrid path: the link plugin's
// instance (its options name the file and the role) and a second instance of the engine's backend on the same card,
// on which this engine serves the other's requests (null: it asks but never serves).
struct EngineLink {
  std::unique_ptr<PluginInstance> plugin;
  uint32_t role = 0;
  std::unique_ptr<Backend> service;
  explicit operator bool() const { return plugin != nullptr; }
};

struct EngineSettings {
  uint32_t context = 4096;  // positions per slot
  uint32_t slots = 1;
  uint32_t batch = 512;     // prefill chunk
  uint32_t max_window_logits = 16;  // feed_window's limit: every token's logits are kept
  format::GgmlType kv_type = format::GgmlType::F16;
  config::ExpertsConfig experts;  // the hybrid path's expert cache (GPU backends)
  unsigned threads = 0;           // CPU threads for the experts' host copy and the link probe (0 = all cores)
  bool graphs = true;             // the hybrid path's fast mode: decode windows as one device program
  uint32_t layer_split = 0;       // runtime.layer_split: layers [0, K) on the backend's card, the rest on the peer's
  uint64_t gpu_memory = 0;        // runtime.gpu_memory: bytes the engine may use on each GPU (0 = what is free)
};

// runtime.context, runtime.slots, runtime.batch, runtime.kv_type, runtime.threads, runtime.graphs,
// runtime.gpu_memory and experts: of a launch.
EngineSettings settings_from(const config::Launch& launch);

// Tokens routed per (layer, expert) since the start or the last reset_expert_counts, for the serving page's heatmap.
struct ExpertUsage {
  uint32_t n_layer = 0, n_expert = 0;  // 0 x 0: this engine does not see its routes (a dense model, or every expert
                                       // on the device, where the choices never leave it)
  std::vector<uint64_t> routed;        // [n_layer * n_expert], layer-major
  std::vector<uint64_t> hits;          // same shape, tokens routed to experts in the VRAM cache; empty without one
};

class Engine {
 public:
  // On a GPU backend with streams (backend 1.2) the weights go to the device: all of them, or, when
  // settings.experts.cache is set (or `auto` and the model does not fit), all but the routed experts, which then
  // take the hybrid path (a VRAM expert cache, PCIe reads and `pool`'s CPU computations; see hybrid_moe.hpp).
  // `balancer`: a plugin of the balancer family (pcie_balance) that picks each layer's PCIe count from fitted costs.
  // `peer`: a second device of the backend (runtime.peer_device). With settings.layer_split K it runs layers K and
  // up (its own weights, KV cache, activations and expert cache; the residual stream crosses over once a window);
  // otherwise the hybrid path uses it as an extra expert tier (peer_tier.hpp), and it is unused, with a line saying
  // so, when the engine takes no hybrid path.
  Engine(std::unique_ptr<Model> model, std::unique_ptr<Backend> backend, const EngineSettings& settings,
         std::unique_ptr<PluginInstance> pool = nullptr, std::unique_ptr<PluginInstance> balancer = nullptr,
         std::unique_ptr<Backend> peer = nullptr, EngineLink link = {});
  // Loads launch.model and the launch's backend (select_backend; plugins found on the launch's search path).
  static std::unique_ptr<Engine> from_launch(const config::Launch& launch);
  ~Engine();

  const Model& model() const { return *model_; }
  Backend& backend() { return *backend_; }
  const KvCache& kv() const { return kv_; }
  // The weights' copy on the backend's device (null when the backend reads the mapped file).
  const DeviceWeights* device_weights() const { return device_weights_.get(); }
  const EngineSettings& settings() const { return settings_; }

  // Appends `tokens` to `slot`'s sequence (windows of at most `batch` tokens) and returns the logits of the last
  // one: n_vocab floats, valid until the next call. Throws strata::Error when the context is full.
  std::span<const float> feed(uint32_t slot, std::span<const TokenId> tokens);
  // One window whose every token's logits are kept ([n_vocab] per token, token-major); at most
  // max_window_logits tokens (verify windows are short).
  std::span<const float> feed_window(uint32_t slot, std::span<const TokenId> tokens);
  // An image's tokens (Qwen3-VL: the projector's rows, Model::input_width() floats each, raster order over an nx x ny
  // grid) appended to `slot`'s sequence in windows of at most `batch` tokens. Token i takes the M-RoPE position
  // (P, P + i / nx, P + i % nx, 0), P the next text position; the text after the image continues at P + advance
  // (max(nx, ny)), while the cache holds nx x ny columns. Returns the last image token's logits.
  struct ImageTokens {
    std::span<const float> rows;
    uint32_t nx = 0, ny = 0;
    uint32_t advance = 0;
  };
  std::span<const float> feed_image(uint32_t slot, const ImageTokens& image);
  // One decode step of several sequences at once (runtime.slots): each entry's token is appended to its slot (each
  // slot at most once), all in one window, and each entry's logits come back in the same order ([n_vocab] per
  // entry, valid until the next call). A sequence's ids are the same as when it is fed alone.
  struct SlotToken {
    uint32_t slot;
    TokenId token;
  };
  std::span<const float> step(std::span<const SlotToken> next);
  // Positions `slot` holds; cut(slot, p) forgets those from p on.
  uint32_t position(uint32_t slot) const { return kv_.length(slot); }
  void cut(uint32_t slot, uint32_t position);
  // While set, ops run one at a time and their times are added to `profile` (null: off).
  void set_profile(OpProfile* profile) { profile_ = profile; }
  // Whether routed experts take the hybrid path; its summary (cache hits, experts by source, bytes, times) since
  // the start, empty when not hybrid.
  bool hybrid() const { return hybrid_ != nullptr; }
  // With the measured decode rate, the roofline line also says what fraction of its ceiling that is.
  std::string expert_summary(double decode_tokens_per_s = 0) const;
  // Starts the summary's counts again (the cache keeps its residents).
  void reset_expert_counts();
  // A copy of the routing counts. Call it from the thread that feeds the engine, between feeds.
  ExpertUsage expert_usage() const;
  // A request's own share of misses read over PCIe on the hybrid path (an engine request option): it replaces the
  // launch's (or the probe's) share and pauses the balancer until cleared with nullopt. Returns false, changing
  // nothing, when the engine has no hybrid path. Throws strata::Error for a share outside 0..1.
  bool set_request_pcie_frac(std::optional<double> frac);
  // The peer tier (runtime.peer_device on the hybrid path), between windows: detach gives its slots back and plans
  // its experts as misses (the ids do not change); attach refills the slots from the host arena. Each returns what
  // it did; strata::Error says why not (no peer tier, or already so).
  std::string detach_peer();
  std::string attach_peer();
  // POOL_HOLD: the hybrid path's CPU expert pool uses at most n workers from the next window on (0: all again), so
  // another engine process gets the other cores; the ids do not change. Returns what it did; strata::Error says why
  // not (no pool, or a pool plugin older than expert_pool 1.1).
  std::string hold_pool(uint32_t n);
  // LINK_SERVE: whether this engine's service answers the other engine's requests for the experts its card holds.
  // Returns what it did; strata::Error says why not (no peer link, or no device to serve on).
  std::string serve_link(bool on);

 private:
  // One card's part of the model: its layers, weights, KV cache, activations and hybrid path.
  struct Card {
    Backend* backend = nullptr;
    LayerRange layers;
    const DeviceWeights* weights = nullptr;
    const KvCache* kv = nullptr;
    Activations* act = nullptr;
    HybridMoe* hybrid = nullptr;
  };
  // The second card of a layer split, which owns its parts (the first card's are the members below).
  struct SecondCard;
  Card first_card();
  void run(const Window& w);
  void run_card(const Card& card, const Window& w);
  void run_profiled(Backend& backend, const std::vector<Stage>& stages);
  // The activations whose logits a window leaves: the last card's.
  Activations& head_act();
  // experts.record: the recorder of this run's routing counts (at the constructor's end).
  void start_record();
  // Declared first, destroyed last: it keeps the plugin libraries loaded while the backend lives.
  std::unique_ptr<PluginRegistry> registry_;
  std::unique_ptr<PluginInstance> pool_plugin_;  // the CPU expert pool of the hybrid path
  std::unique_ptr<PluginInstance> balancer_plugin_;  // the hybrid path's PCIe share, when one is enabled
  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> peer_backend_;  // runtime.peer_device's device, or null
  EngineLink link_;                        // the peer link's plugin and the service's device, or empty
  std::unique_ptr<LinkTier> link_tier_;    // the link, open (destroyed after hybrid_, whose service uses it)
  EngineSettings settings_;
  LayerRange first_layers_;  // the backend's card's layers: all, or [0, layer_split)
  // Below: memory of the backend's device when it has one; destroyed before the backend.
  std::unique_ptr<DeviceWeights> device_weights_;
  KvCache kv_;
  Activations act_;
  // M-RoPE: each slot's images (first cache column, tokens, position advance), so that a text token's t is its
  // cache position minus what the images took beyond their advance.
  struct ImageSpan {
    uint32_t column = 0, n = 0, advance = 0;
  };
  std::vector<std::vector<ImageSpan>> images_;
  int32_t rope_shift(uint32_t slot) const;
  std::unique_ptr<HybridMoe> hybrid_;  // destroyed before the above: it uses the activations and the device
  std::unique_ptr<SecondCard> second_;  // destroyed first: it shares hybrid_'s arena and the peer's device
  OpProfile* profile_ = nullptr;
  std::unique_ptr<RouteRecorder> recorder_;  // experts.record, or null
};

}  // namespace strata
