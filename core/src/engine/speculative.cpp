#include "strata/speculative.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "strata/backend.hpp"
#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"
#include "strata/sampling.hpp"

namespace strata {

std::vector<TokenId> NgramDraft::propose(std::span<const TokenId> context, uint32_t n_max) {
  std::vector<TokenId> out;
  const size_t n = context.size();
  if (n_max == 0 || n < 2) return out;
  for (size_t g = std::min<size_t>(max_ngram_, n - 1); g >= std::max<uint32_t>(min_ngram_, 1); --g) {
    const std::span<const TokenId> suffix = context.subspan(n - g, g);
    // The most recent earlier occurrence: it starts at s < n - g, and something follows it.
    for (size_t s = n - g; s-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + static_cast<std::ptrdiff_t>(s))) continue;
      const size_t from = s + g;
      const size_t take = std::min<size_t>(n_max, n - from);
      out.assign(context.begin() + static_cast<std::ptrdiff_t>(from),
                 context.begin() + static_cast<std::ptrdiff_t>(from + take));
      return out;
    }
    if (g == 1) break;
  }
  return out;
}

ModelDraft::ModelDraft(std::unique_ptr<Engine> engine, std::unique_ptr<PluginRegistry> registry, uint32_t n_max)
    : registry_(std::move(registry)),
      engine_(std::move(engine)),
      n_max_(std::max<uint32_t>(n_max, 1)),
      n_cur_(n_max_),
      mean_accepted_(static_cast<double>(n_max_)) {}

ModelDraft::~ModelDraft() = default;

std::vector<TokenId> ModelDraft::propose(std::span<const TokenId> context, uint32_t n_max) {
  std::vector<TokenId> out;
  if (context.empty()) return out;
  const size_t ctx = engine_->settings().context;
  uint32_t n = std::min(n_max, n_cur_);
  if (context.size() >= ctx) return out;
  n = static_cast<uint32_t>(std::min<size_t>(n, ctx - context.size()));
  if (n == 0) return out;
  // The common prefix with what the draft's slot holds; at least the context's last token is fed (its logits
  // give the first proposal).
  size_t common = 0;
  while (common < held_.size() && common < context.size() && held_[common] == context[common]) ++common;
  common = std::min(common, context.size() - 1);
  engine_->cut(0, static_cast<uint32_t>(common));
  held_.resize(common);
  std::span<const float> logits = engine_->feed(0, context.subspan(common));
  held_.assign(context.begin(), context.end());
  for (uint32_t i = 0; i < n; ++i) {
    const TokenId t = sampling::argmax(logits);
    out.push_back(t);
    if (i + 1 == n) break;
    logits = engine_->feed(0, std::span<const TokenId>(&t, 1));
    held_.push_back(t);
  }
  return out;
}

void ModelDraft::feedback(size_t proposed, size_t accepted) {
  (void)proposed;
  mean_accepted_ = 0.7 * mean_accepted_ + 0.3 * static_cast<double>(accepted);
  const double want = std::floor(mean_accepted_ + 0.5) + 2.0;
  n_cur_ = static_cast<uint32_t>(std::clamp(want, 1.0, static_cast<double>(n_max_)));
}

void ModelDraft::truncate(size_t length) {
  if (length < held_.size()) {
    held_.resize(length);
    engine_->cut(0, static_cast<uint32_t>(length));
  }
}

std::string vocabulary_difference(const Tokenizer& target, const Tokenizer& draft) {
  if (target.size() != draft.size()) {
    return std::to_string(draft.size()) + " tokens against the model's " + std::to_string(target.size());
  }
  for (size_t t = 0; t < target.size(); ++t) {
    const TokenId id = static_cast<TokenId>(t);
    if (target.token_text(id) != draft.token_text(id)) {
      return "token " + std::to_string(t) + " is \"" + std::string(draft.token_text(id)) + "\", the model's \"" +
             std::string(target.token_text(id)) + "\"";
    }
  }
  if (target.bos() != draft.bos()) return "another BOS token";
  if (target.eos() != draft.eos()) return "another EOS token";
  return {};
}

namespace {

std::unique_ptr<Backend> draft_backend(const config::Launch& launch, const PluginRegistry& registry) {
  const std::string& want = launch.speculative.backend;
  if (want == "launch") return select_backend(launch, registry);
  if (want == "reference") return make_reference_backend();
  if (want == "cpu") {
    const PluginCandidate* c = registry.find("cpu_avx2");
    const config::PluginEntry* entry = launch.plugin("cpu_avx2");
    const bool off = entry != nullptr && !entry->enabled;
    if (c != nullptr && c->verdict == PluginCandidate::Verdict::Usable && !off) {
      return make_plugin_backend(registry.instantiate("cpu_avx2", backend_options(launch, "cpu_avx2")));
    }
    return make_reference_backend();
  }
  const PluginCandidate* c = registry.find(want);
  if (c == nullptr || c->verdict != PluginCandidate::Verdict::Usable || c->kind != STRATA_KIND_BACKEND) {
    throw Error("speculative.backend: '" + want +
                "' is not a usable backend here; use cpu, launch, reference or a backend `strata plugins` lists as usable");
  }
  return make_plugin_backend(registry.instantiate(want, backend_options(launch, want)));
}

}  // namespace

std::unique_ptr<Draft> make_draft(const config::Launch& launch, const Engine& target) {
  const config::SpeculativeConfig& sp = launch.speculative;
  const uint32_t n_max = static_cast<uint32_t>(std::max(sp.n_max, 1));
  switch (sp.draft) {
    case config::DraftKind::Off:
      return nullptr;
    case config::DraftKind::Ngram:
      return std::make_unique<NgramDraft>();
    case config::DraftKind::Model:
      break;
  }
  if (!sp.model) throw Error("speculative.draft: model needs speculative.model: FILE");
  const std::string& file = *sp.model;
  std::unique_ptr<Model> model;
  try {
    model = Model::load(file);
  } catch (const std::exception& e) {
    throw Error("speculative.model: " + file + ": " + e.what());
  }
  if (const std::string diff = vocabulary_difference(target.model().tokenizer(), model->tokenizer());
      !diff.empty()) {
    throw Error("speculative.model: " + file + " has another vocabulary than the model (" + diff +
                "); a draft model must share the model's tokenizer");
  }
  const char* env_path = std::getenv("STRATA_PLUGIN_PATH");
  std::vector<std::filesystem::path> folders(launch.plugin_path.begin(), launch.plugin_path.end());
  auto registry = std::make_unique<PluginRegistry>(default_search_path(folders, env_path ? env_path : ""));
  std::unique_ptr<Backend> backend = draft_backend(launch, *registry);
  EngineSettings s;
  s.context = target.settings().context;
  s.slots = 1;
  s.batch = target.settings().batch;
  s.threads = target.settings().threads;
  s.max_window_logits = 1;
  auto engine = std::make_unique<Engine>(std::move(model), std::move(backend), s);
  log::info("speculative: draft model " + std::filesystem::path(file).filename().string() + " on " +
            engine->backend().name() + ", up to " + std::to_string(n_max) + " tokens a window");
  return std::make_unique<ModelDraft>(std::move(engine), std::move(registry), n_max);
}

std::string draft_summary(const DraftStats& s) {
  char buf[160];
  const double pct = s.drafted ? 100.0 * static_cast<double>(s.accepted) / static_cast<double>(s.drafted) : 0.0;
  std::snprintf(buf, sizeof buf, "drafted %llu, accepted %llu (%.1f%%), mean accepted length %.2f",
                static_cast<unsigned long long>(s.drafted), static_cast<unsigned long long>(s.accepted), pct,
                s.mean_accepted_length());
  return buf;
}

}  // namespace strata
