#include "strata/serve/engine_worker.hpp"

#include <algorithm>
#include <chrono>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/prompt_images.hpp"

namespace strata::serve {

EngineWorker::EngineWorker(Engine& engine, size_t queue_capacity, ServerMetrics& metrics)
    : engine_(engine),
      metrics_(metrics),
      cache_(engine.settings().slots),
      queue_(queue_capacity, engine.settings().slots),
      usage_(engine.expert_usage()),
      thread_([this] { loop(); }) {}

EngineWorker::~EngineWorker() { stop(); }

bool EngineWorker::submit(std::shared_ptr<Job> job) {
  if (stopping_) return false;
  return queue_.try_push(job);
}

void EngineWorker::stop() {
  stopping_ = true;
  queue_.close();
  if (thread_.joinable()) thread_.join();
}

size_t EngineWorker::active() const { return queue_.in_service(); }

ExpertUsage EngineWorker::expert_usage() const {
  std::lock_guard lock(usage_mutex_);
  return usage_;
}

void EngineWorker::loop() {
  const uint32_t slots = engine_.settings().slots;
  for (;;) {
    // New jobs take the free slots: waiting for one when nothing runs, else only those already queued.
    while (running_.size() < slots) {
      std::optional<std::shared_ptr<Job>> job = running_.empty() ? queue_.pop() : queue_.try_pop();
      if (!job) break;
      auto r = std::make_unique<Running>();
      r->job = std::move(*job);
      if (start(*r)) running_.push_back(std::move(r));
    }
    if (running_.empty()) {
      if (queue_.closed() && queue_.size() == 0) return;
      continue;
    }
    step();
  }
}

bool EngineWorker::keep_going(Running& r, const GeneratedToken& token) {
  Job& job = *r.job;
  const auto now = std::chrono::steady_clock::now();
  if (token.id != kNoToken) {
    int64_t unset = -1;
    job.first_token_ns.compare_exchange_strong(
        unset, std::chrono::duration_cast<std::chrono::nanoseconds>(now - job.arrival).count());
    job.channel.push(token);
  } else if (!token.text.empty()) {
    job.channel.push(token);
  }
  if (now >= job.deadline) r.out.timed_out = true;
  return !(r.out.timed_out || stopping_ || job.cancelled || job.peer.gone());
}

bool EngineWorker::start(Running& r) {
  Job& job = *r.job;
  r.out.prompt_tokens = job.prompt.size();
  if (stopping_) {
    r.out.error = ApiError{503, "the server is shutting down", "server_error", {}, "shutting_down"};
  } else if (job.cancelled || job.peer.gone()) {  // the client left while the job waited: nobody to answer
    r.out.result.stop = StopCause::Cancelled;
  } else if (std::chrono::steady_clock::now() >= job.deadline) {
    r.out.error = ApiError{503, "the request waited longer than serve.request_timeout_s for the engine",
                           "server_error", {}, "timeout"};
  }
  if (r.out.error || r.out.result.stop == StopCause::Cancelled) {
    queue_.finished();
    job.channel.finish(std::move(r.out));
    return false;
  }
  std::vector<bool> busy(engine_.settings().slots, false);
  for (const auto& other : running_) busy[other->slot] = true;
  // With images the keyed prompt: a slot's prefix is shared through an image only when it held the same bytes.
  const PrefixCache::Choice choice = cache_.choose(job.cache_key.empty() ? job.prompt : job.cache_key, busy);
  r.slot = choice.slot;
  try {
    // The request's images through the projector on the engine's backend (this thread owns it), then their rows
    // stand where the HTTP thread placed their tokens.
    if (!job.image_inputs.empty()) {
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t k = 0; k < job.image_inputs.size(); ++k) {
        job.image_rows.push_back(encode_image(engine_, *job.projector, job.image_inputs[k]));
        Engine::ImageTokens& placed = job.options.images.at(k).tokens;
        const vision::Embeddings& e = job.image_rows.back();
        if (e.nx != placed.nx || e.ny != placed.ny) throw Error("an image's grid differs from the one placed");
        placed.rows = e.rows;
      }
      job.image_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    // A request's own PCIe share applies while it runs alone or beside others that set none.
    if (running_.empty() || job.pcie_frac) engine_.set_request_pcie_frac(job.pcie_frac);
    r.completion = std::make_unique<Completion>(engine_, choice.slot, job.prompt, choice.reuse, job.options,
                                                 [this, &r](const GeneratedToken& t) { return keep_going(r, t); });
    r.pending = r.completion->begin(engine_);
  } catch (const std::exception& e) {
    fail(r, e);
  }
  if (r.completion && r.pending != kNoToken) return true;
  finish(r);
  return false;
}

void EngineWorker::step() {
  if (running_.size() == 1) {
    // One job alone: its token fed as a one-token step, or with its drafts as a verify window.
    Running& r = *running_.front();
    metrics_.record_step(1);
    try {
      r.pending = r.completion->advance(engine_, r.pending);
    } catch (const std::exception& e) {
      fail(r, e);
    }
    if (r.pending == kNoToken) {
      finish(r);
      running_.clear();
    }
    return;
  }
  std::vector<Engine::SlotToken> tokens;
  for (const auto& r : running_) tokens.push_back({r->slot, r->pending});
  const size_t n_vocab = engine_.model().hparams().n_vocab;
  metrics_.record_step(tokens.size());
  std::span<const float> logits;
  try {
    // One job alone feeds its token as it always did; several share one window.
    logits = tokens.size() == 1 ? engine_.feed(tokens[0].slot, std::span<const TokenId>(&tokens[0].token, 1))
                                : engine_.step(tokens);
  } catch (const std::exception& e) {
    for (auto& r : running_) {
      fail(*r, e);
      finish(*r);
    }
    running_.clear();
    return;
  }
  std::vector<std::unique_ptr<Running>> still;
  for (size_t i = 0; i < running_.size(); ++i) {
    Running& r = *running_[i];
    try {
      r.pending = r.completion->next(logits.subspan(i * n_vocab, n_vocab));
    } catch (const std::exception& e) {
      fail(r, e);
    }
    if (r.pending != kNoToken) {
      still.push_back(std::move(running_[i]));
    } else {
      finish(r);
    }
  }
  running_ = std::move(still);
}

void EngineWorker::fail(Running& r, const std::exception& e) {
  cache_.forget(r.slot);  // what the slot holds is not known
  log::error(std::string("strata serve: a completion failed: ") + e.what());
  r.out.error = ApiError{500, std::string("the engine failed: ") + e.what(), "server_error", {}, "engine_error"};
  r.completion.reset();
  r.pending = kNoToken;
}

void EngineWorker::finish(Running& r) {
  Job& job = *r.job;
  if (r.completion) {
    r.out.result = r.completion->result();
    // The slot holds the prompt and the reply tokens fed back: the next request may reuse them.
    std::vector<TokenId> held = job.cache_key.empty() ? job.prompt : job.cache_key;
    held.insert(held.end(), r.out.result.generated_ids.begin(), r.out.result.generated_ids.end());
    held.resize(std::min<size_t>(held.size(), engine_.position(r.slot)));
    cache_.record(r.slot, std::move(held));
  }
  if (running_.size() <= 1) engine_.set_request_pcie_frac(std::nullopt);
  if (!r.out.error) {
    CompletionStats stats;
    stats.prompt_tokens = job.prompt.size();
    stats.cached_tokens = r.out.result.reused_tokens;
    stats.generated_tokens = r.out.result.generated_ids.size();
    stats.prompt_seconds = r.out.result.prompt_seconds;
    stats.decode_tokens = r.out.result.decode_tokens;
    stats.decode_seconds = r.out.result.decode_seconds;
    stats.draft_windows = r.out.result.draft.windows;
    stats.drafted_tokens = r.out.result.draft.drafted;
    stats.accepted_tokens = r.out.result.draft.accepted;
    stats.images = job.image_rows.size();
    stats.image_tokens = job.image_tokens;
    stats.image_seconds = job.image_seconds;
    const int64_t ttft = job.first_token_ns.load();
    stats.ttft_seconds = ttft >= 0 ? static_cast<double>(ttft) * 1e-9 : -1.0;
    metrics_.record(stats);
  }
  {
    ExpertUsage usage = engine_.expert_usage();
    std::lock_guard lock(usage_mutex_);
    usage_ = std::move(usage);
  }
  // Out of service before the answer goes back, so that a client that has its answer sees the engine free.
  queue_.finished();
  job.channel.finish(std::move(r.out));
}

}  // namespace strata::serve
