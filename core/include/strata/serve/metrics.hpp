// The server's counts for /metrics (Prometheus text format 0.0.4) and /live (JSON for the page): requests by
// endpoint and status, tokens, the last request's prompt and decode rates, a time-to-first-token histogram, and
// gauges the caller passes in (queue, running requests, the engine's expert routes). Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "strata/engine.hpp"

namespace strata::serve {

// One finished completion, as the metrics count it.
struct CompletionStats {
  size_t prompt_tokens = 0;     // the whole prompt
  size_t cached_tokens = 0;     // of which the slot already held (not fed)
  size_t generated_tokens = 0;
  double prompt_seconds = 0.0;  // feeding the prompt's other tokens
  size_t decode_tokens = 0;     // generated tokens fed back
  double decode_seconds = 0.0;
  double ttft_seconds = -1.0;   // from the request's arrival to its first token; < 0: none was generated
  // Speculative decoding: verify windows with drafts, tokens drafted, of them accepted.
  size_t draft_windows = 0, drafted_tokens = 0, accepted_tokens = 0;
  // Images (image_url parts): how many, their tokens (part of prompt_tokens) and the projector's time on them.
  size_t images = 0, image_tokens = 0;
  double image_seconds = 0.0;
};

// What the caller knows at the time of a scrape.
struct ServeGauges {
  size_t queue = 0;   // requests waiting
  size_t active = 0;  // requests generating
  const ExpertUsage* experts = nullptr;  // routes so far; null or 0 x 0 when the engine does not see them
};

class ServerMetrics {
 public:
  // Upper bounds of the time-to-first-token buckets, in seconds (+Inf follows).
  static constexpr std::array<double, 12> kTtftBuckets = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

  ServerMetrics();
  void count_request(const std::string& endpoint, int status);
  void record(const CompletionStats& stats);
  // One decode step of the engine and how many sequences it held (runtime.slots: requests decoded together).
  void record_step(size_t sequences);

  // The elastic desk (serve.elastic.lanes 2): its counters are exported from desk_started() on.
  enum class DeskEvent { Wake, FailedWake, Sleep, LaneDied };
  void desk_started();
  void record_desk(DeskEvent event);

  std::string prometheus(const ServeGauges& gauges) const;
  // requests_total counts completions (not every HTTP request: the page polls /live itself).
  // {"model", "uptime_s", "requests_total", "active", "queue", "prompt_tokens_per_s", "decode_tokens_per_s",
  //  "ttft_ms", "tokens_total", "expert": {"n_layer", "n_expert", "routed": rows, "hits": rows or null}}
  nlohmann::json live(const ServeGauges& gauges, const std::string& model) const;

 private:
  mutable std::mutex mutex_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (endpoint, status) -> count
  uint64_t completions_ = 0;
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  uint64_t draft_windows_ = 0, drafted_tokens_ = 0, accepted_tokens_ = 0;
  uint64_t images_ = 0, image_tokens_ = 0;
  double image_seconds_ = 0.0;
  double last_prompt_rate_ = 0.0, last_decode_rate_ = 0.0, last_ttft_ = 0.0;
  std::array<uint64_t, kTtftBuckets.size()> ttft_counts_{};  // per bucket, not cumulative
  uint64_t ttft_count_ = 0;
  double ttft_sum_ = 0.0;
  uint64_t decode_steps_ = 0, step_sequences_ = 0;
  bool desk_ = false;
  uint64_t wakes_ = 0, failed_wakes_ = 0, sleeps_ = 0, lane_deaths_ = 0;
};

}  // namespace strata::serve
