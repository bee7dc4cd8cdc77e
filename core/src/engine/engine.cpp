#include "strata/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"

namespace strata {

EngineSettings settings_from(const config::Launch& launch) {
  EngineSettings s;
  s.context = static_cast<uint32_t>(launch.runtime.context);
  s.slots = static_cast<uint32_t>(launch.runtime.slots);
  s.batch = static_cast<uint32_t>(launch.runtime.batch);
  s.kv_type = launch.runtime.kv_type == config::KvType::Q8_0 ? format::GgmlType::Q8_0 : format::GgmlType::F16;
  return s;
}

Engine::Engine(std::unique_ptr<Model> model, std::unique_ptr<Backend> backend, const EngineSettings& settings)
    : model_(std::move(model)),
      backend_(std::move(backend)),
      settings_(settings),
      device_weights_(backend_->device_memory() != nullptr
                          ? std::make_unique<DeviceWeights>(*model_, *backend_->device_memory())
                          : nullptr),
      kv_(model_->hparams().n_layer, model_->kv_dim(), settings.context, settings.slots, settings.kv_type,
          backend_->device_memory()),
      act_(model_->make_activations(std::max<uint32_t>(settings.batch, 1), settings.max_window_logits,
                                    backend_->device_memory())) {}

Engine::~Engine() = default;

std::unique_ptr<Engine> Engine::from_launch(const config::Launch& launch) {
  if (!launch.model) throw Error("no model: give --model FILE or set `model:` in the launch");
  const char* env_path = std::getenv("STRATA_PLUGIN_PATH");
  std::vector<std::filesystem::path> folders(launch.plugin_path.begin(), launch.plugin_path.end());
  auto registry = std::make_unique<PluginRegistry>(default_search_path(folders, env_path ? env_path : ""));
  std::unique_ptr<Backend> backend = select_backend(launch, *registry);
  auto engine = std::make_unique<Engine>(Model::load(*launch.model), std::move(backend), settings_from(launch));
  engine->registry_ = std::move(registry);
  log::info("backend: " + engine->backend_->describe());
  return engine;
}

void Engine::run(const Window& w) {
  kv_.check_window(w.slot, w.first_position, static_cast<uint32_t>(w.tokens.size()));
  const std::vector<Stage> stages = model_->build_window(w, act_, kv_, device_weights_.get());
  if (profile_ != nullptr) {
    run_profiled(stages);
  } else {
    for (const Stage& s : stages) {
      backend_->compute(s.ops);
      if (s.host) s.host();
    }
  }
  kv_.set_length(w.slot, w.first_position + static_cast<uint32_t>(w.tokens.size()));
}

void Engine::run_profiled(const std::vector<Stage>& stages) {
  using clock = std::chrono::steady_clock;
  // With TIMESTAMP ops between the ops, a stage runs in one compute call and each op's time is read off the
  // device's clock (no synchronization between ops); otherwise ops run one at a time, timed on the host.
  strata_op stamp{};
  stamp.struct_size = sizeof stamp;
  stamp.kind = STRATA_OP_TIMESTAMP;
  Buffer<int64_t> probe(1, backend_->device_memory());
  stamp.dst = make_tensor(probe.data(), format::GgmlType::I64, {1});
  const bool stamps = backend_->supports(stamp);
  for (const Stage& s : stages) {
    if (stamps && !s.ops.empty()) {
      Buffer<int64_t> t(s.ops.size() + 1, backend_->device_memory());
      std::vector<strata_op> ops;
      for (size_t i = 0; i <= s.ops.size(); ++i) {
        stamp.dst = make_tensor(t.data() + i, format::GgmlType::I64, {1});
        ops.push_back(stamp);
        if (i < s.ops.size()) ops.push_back(s.ops[i]);
      }
      backend_->compute(ops);
      std::vector<int64_t> host(t.size());
      if (t.on_device()) {
        backend_->device_memory()->download(host.data(), t.data(), host.size() * sizeof(int64_t));
      } else {
        std::copy_n(t.data(), host.size(), host.data());
      }
      for (size_t i = 0; i < s.ops.size(); ++i) profile_->add(s.ops[i], static_cast<double>(host[i + 1] - host[i]) * 1e-9);
    } else {
      for (const strata_op& op : s.ops) {
        const auto t0 = clock::now();
        backend_->compute(std::span<const strata_op>(&op, 1));
        profile_->add(op, std::chrono::duration<double>(clock::now() - t0).count());
      }
    }
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
  return act_.read_logits(model_->hparams().n_vocab, 1);
}

std::span<const float> Engine::feed_window(uint32_t slot, std::span<const TokenId> tokens) {
  if (tokens.empty() || tokens.size() > act_.max_logit_rows) {
    throw Error("feed_window: " + std::to_string(tokens.size()) +
                " tokens; a window with every token's logits holds 1 to " + std::to_string(act_.max_logit_rows));
  }
  run(Window{tokens, kv_.length(slot), slot, true});
  return act_.read_logits(model_->hparams().n_vocab, tokens.size());
}

}  // namespace strata
