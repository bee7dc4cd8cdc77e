#include "strata/serve/engine_worker.hpp"

#include <algorithm>

#include "strata/error.hpp"
#include "strata/log.hpp"

namespace strata::serve {

EngineWorker::EngineWorker(Engine& engine, size_t queue_capacity, ServerMetrics& metrics)
    : engine_(engine),
      metrics_(metrics),
      cache_(engine.settings().slots),
      queue_(queue_capacity),
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
  while (std::optional<std::shared_ptr<Job>> job = queue_.pop()) {
    JobOutcome out;
    if (stopping_) {
      out.error = ApiError{503, "the server is shutting down", "server_error", {}, "shutting_down"};
    } else {
      out = run(**job);
    }
    // Out of service before the answer goes back, so that a client that has its answer sees the engine free.
    queue_.finished();
    (*job)->channel.finish(std::move(out));
  }
}

JobOutcome EngineWorker::run(Job& job) {
  JobOutcome out;
  out.prompt_tokens = job.prompt.size();
  if (job.cancelled || job.peer.gone()) {  // the client left while the job waited: nobody to answer
    out.result.stop = StopCause::Cancelled;
    return out;
  }
  if (std::chrono::steady_clock::now() >= job.deadline) {
    out.error = ApiError{503, "the request waited longer than serve.request_timeout_s for the engine", "server_error",
                         {}, "timeout"};
    return out;
  }
  const PrefixCache::Choice choice = cache_.choose(job.prompt);
  // Why a job stops early: the client left, its time ran out, the server stops.
  const auto keep_going = [&](const GeneratedToken& token) {
    const auto now = std::chrono::steady_clock::now();
    if (token.id != kNoToken) {
      int64_t unset = -1;
      job.first_token_ns.compare_exchange_strong(
          unset, std::chrono::duration_cast<std::chrono::nanoseconds>(now - job.arrival).count());
      job.channel.push(token);
    } else if (!token.text.empty()) {
      job.channel.push(token);
    }
    if (now >= job.deadline) out.timed_out = true;
    return !(out.timed_out || stopping_ || job.cancelled || job.peer.gone());
  };
  try {
    engine_.set_request_pcie_frac(job.pcie_frac);
    out.result = complete(engine_, choice.slot, job.prompt, choice.reuse, job.options, keep_going);
    // The slot holds the prompt and the reply tokens fed back: the next request may reuse them.
    std::vector<TokenId> held = job.prompt;
    held.insert(held.end(), out.result.generated_ids.begin(), out.result.generated_ids.end());
    held.resize(std::min<size_t>(held.size(), engine_.position(choice.slot)));
    cache_.record(choice.slot, std::move(held));
  } catch (const std::exception& e) {
    cache_.forget(choice.slot);
    log::error(std::string("strata serve: a completion failed: ") + e.what());
    out.error = ApiError{500, std::string("the engine failed: ") + e.what(), "server_error", {}, "engine_error"};
  }
  engine_.set_request_pcie_frac(std::nullopt);

  if (!out.error) {
    CompletionStats stats;
    stats.prompt_tokens = job.prompt.size();
    stats.cached_tokens = out.result.reused_tokens;
    stats.generated_tokens = out.result.generated_ids.size();
    stats.prompt_seconds = out.result.prompt_seconds;
    stats.decode_tokens = out.result.decode_tokens;
    stats.decode_seconds = out.result.decode_seconds;
    const int64_t ttft = job.first_token_ns.load();
    stats.ttft_seconds = ttft >= 0 ? static_cast<double>(ttft) * 1e-9 : -1.0;
    metrics_.record(stats);
  }
  ExpertUsage usage = engine_.expert_usage();
  std::lock_guard lock(usage_mutex_);
  usage_ = std::move(usage);
  return out;
}

}  // namespace strata::serve
