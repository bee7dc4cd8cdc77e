#include "strata/serve/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "strata/steady_seconds.hpp"

namespace strata::serve {
namespace {

// A sample value as Prometheus reads it: integers without a fraction, others with enough digits.
std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void family(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void sample(std::string& out, const std::string& name, double value) {
  out += name;
  out += ' ';
  out += number(value);
  out += '\n';
}

// Label values escape backslash, double quote and newline.
std::string label_value(const std::string& v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

nlohmann::json rows(const std::vector<uint64_t>& flat, uint32_t n_layer, uint32_t n_expert) {
  nlohmann::json out = nlohmann::json::array();
  for (uint32_t l = 0; l < n_layer; ++l) {
    const auto first = flat.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(l) * n_expert);
    out.push_back(std::vector<uint64_t>(first, first + n_expert));
  }
  return out;
}

bool sees_routes(const ExpertUsage* u) {
  return u != nullptr && u->n_layer > 0 && u->n_expert > 0 &&
         u->routed.size() == static_cast<size_t>(u->n_layer) * u->n_expert;
}

}  // namespace

ServerMetrics::ServerMetrics() : start_(std::chrono::steady_clock::now()) {}

void ServerMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void ServerMetrics::record_step(size_t sequences) {
  std::lock_guard lock(mutex_);
  ++decode_steps_;
  step_sequences_ += sequences;
}

void ServerMetrics::desk_started() {
  std::lock_guard lock(mutex_);
  desk_ = true;
}

void ServerMetrics::record_desk(DeskEvent event) {
  std::lock_guard lock(mutex_);
  switch (event) {
    case DeskEvent::Wake: ++wakes_; break;
    case DeskEvent::FailedWake: ++failed_wakes_; break;
    case DeskEvent::Sleep: ++sleeps_; break;
    case DeskEvent::LaneDied: ++lane_deaths_; break;
  }
}

void ServerMetrics::record(const CompletionStats& s) {
  std::lock_guard lock(mutex_);
  ++completions_;
  prompt_tokens_ += s.prompt_tokens;
  cached_tokens_ += s.cached_tokens;
  generated_tokens_ += s.generated_tokens;
  draft_windows_ += s.draft_windows;
  drafted_tokens_ += s.drafted_tokens;
  accepted_tokens_ += s.accepted_tokens;
  images_ += s.images;
  image_tokens_ += s.image_tokens;
  image_seconds_ += s.image_seconds;
  last_prompt_rate_ = per_second(s.prompt_tokens - std::min(s.cached_tokens, s.prompt_tokens), s.prompt_seconds);
  last_decode_rate_ = per_second(s.decode_tokens, s.decode_seconds);
  if (s.ttft_seconds >= 0) {
    last_ttft_ = s.ttft_seconds;
    const auto bucket = std::lower_bound(kTtftBuckets.begin(), kTtftBuckets.end(), s.ttft_seconds);
    if (bucket != kTtftBuckets.end()) ++ttft_counts_[static_cast<size_t>(bucket - kTtftBuckets.begin())];
    ++ttft_count_;
    ttft_sum_ += s.ttft_seconds;
  }
}

std::string ServerMetrics::prometheus(const ServeGauges& g) const {
  std::lock_guard lock(mutex_);
  std::string out;
  family(out, "strata_requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, count] : requests_) {
    sample(out,
           "strata_requests_total{endpoint=\"" + label_value(key.first) + "\",status=\"" + std::to_string(key.second) +
               "\"}",
           static_cast<double>(count));
  }
  family(out, "strata_completions_total", "counter", "Completions run on the engine.");
  sample(out, "strata_completions_total", static_cast<double>(completions_));
  family(out, "strata_prompt_tokens_total", "counter", "Prompt tokens of completions, cached ones included.");
  sample(out, "strata_prompt_tokens_total", static_cast<double>(prompt_tokens_));
  family(out, "strata_prompt_cached_tokens_total", "counter", "Prompt tokens reused from a slot's KV, not fed again.");
  sample(out, "strata_prompt_cached_tokens_total", static_cast<double>(cached_tokens_));
  family(out, "strata_images_total", "counter", "Images in completions' prompts (image_url parts).");
  sample(out, "strata_images_total", static_cast<double>(images_));
  family(out, "strata_image_tokens_total", "counter", "Prompt tokens that images stand for (part of the prompt tokens).");
  sample(out, "strata_image_tokens_total", static_cast<double>(image_tokens_));
  family(out, "strata_image_encode_seconds_total", "counter", "Seconds the vision projector spent on images.");
  sample(out, "strata_image_encode_seconds_total", image_seconds_);
  family(out, "strata_generated_tokens_total", "counter", "Tokens generated.");
  sample(out, "strata_generated_tokens_total", static_cast<double>(generated_tokens_));
  family(out, "strata_speculative_drafted_tokens_total", "counter",
         "Tokens drafted for verify windows (speculative decoding).");
  sample(out, "strata_speculative_drafted_tokens_total", static_cast<double>(drafted_tokens_));
  family(out, "strata_speculative_accepted_tokens_total", "counter", "Drafted tokens the model accepted.");
  sample(out, "strata_speculative_accepted_tokens_total", static_cast<double>(accepted_tokens_));
  family(out, "strata_speculative_windows_total", "counter", "Verify windows that carried drafted tokens.");
  sample(out, "strata_speculative_windows_total", static_cast<double>(draft_windows_));
  family(out, "strata_prompt_tokens_per_second", "gauge", "Prompt tokens fed per second, last completion.");
  sample(out, "strata_prompt_tokens_per_second", last_prompt_rate_);
  family(out, "strata_decode_tokens_per_second", "gauge", "Tokens decoded per second, last completion.");
  sample(out, "strata_decode_tokens_per_second", last_decode_rate_);
  family(out, "strata_time_to_first_token_seconds", "histogram", "From a request's arrival to its first token.");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kTtftBuckets.size(); ++i) {
    cumulative += ttft_counts_[i];
    sample(out, "strata_time_to_first_token_seconds_bucket{le=\"" + number(kTtftBuckets[i]) + "\"}",
           static_cast<double>(cumulative));
  }
  sample(out, "strata_time_to_first_token_seconds_bucket{le=\"+Inf\"}", static_cast<double>(ttft_count_));
  sample(out, "strata_time_to_first_token_seconds_sum", ttft_sum_);
  sample(out, "strata_time_to_first_token_seconds_count", static_cast<double>(ttft_count_));
  family(out, "strata_queue_length", "gauge", "Requests waiting for the engine.");
  sample(out, "strata_queue_length", static_cast<double>(g.queue));
  family(out, "strata_requests_active", "gauge", "Requests generating.");
  sample(out, "strata_requests_active", static_cast<double>(g.active));
  family(out, "strata_decode_steps_total", "counter", "Decode steps of the engine (one token of each running request).");
  sample(out, "strata_decode_steps_total", static_cast<double>(decode_steps_));
  family(out, "strata_decode_step_sequences_total", "counter",
         "Requests the decode steps held, summed (over strata_decode_steps_total: the mean batch).");
  sample(out, "strata_decode_step_sequences_total", static_cast<double>(step_sequences_));
  if (desk_) {
    family(out, "strata_desk_wakes_total", "counter", "Times the elastic desk's helper engine was woken for a request.");
    sample(out, "strata_desk_wakes_total", static_cast<double>(wakes_));
    family(out, "strata_desk_failed_wakes_total", "counter", "Wakes whose helper engine did not start.");
    sample(out, "strata_desk_failed_wakes_total", static_cast<double>(failed_wakes_));
    family(out, "strata_desk_sleeps_total", "counter", "Times the helper engine was put to sleep after serve.elastic.hold_s.");
    sample(out, "strata_desk_sleeps_total", static_cast<double>(sleeps_));
    family(out, "strata_desk_lane_deaths_total", "counter", "Engine lanes (processes) that ended unasked.");
    sample(out, "strata_desk_lane_deaths_total", static_cast<double>(lane_deaths_));
  }
  if (sees_routes(g.experts)) {
    const ExpertUsage& u = *g.experts;
    const uint64_t routed = std::accumulate(u.routed.begin(), u.routed.end(), uint64_t{0});
    family(out, "strata_expert_routed_total", "counter", "Tokens routed to experts (token x expert choices).");
    sample(out, "strata_expert_routed_total", static_cast<double>(routed));
    if (u.hits.size() == u.routed.size()) {
      const uint64_t hits = std::accumulate(u.hits.begin(), u.hits.end(), uint64_t{0});
      family(out, "strata_expert_cache_hits_total", "counter", "Routed choices whose expert was in the VRAM cache.");
      sample(out, "strata_expert_cache_hits_total", static_cast<double>(hits));
      family(out, "strata_expert_cache_hit_rate", "gauge", "Share of routed choices served from the VRAM cache.");
      sample(out, "strata_expert_cache_hit_rate", routed > 0 ? static_cast<double>(hits) / static_cast<double>(routed) : 0.0);
    }
  }
  return out;
}

nlohmann::json ServerMetrics::live(const ServeGauges& g, const std::string& model) const {
  std::lock_guard lock(mutex_);
  nlohmann::json expert = nullptr;
  if (sees_routes(g.experts)) {
    const ExpertUsage& u = *g.experts;
    expert = {{"n_layer", u.n_layer},
              {"n_expert", u.n_expert},
              {"routed", rows(u.routed, u.n_layer, u.n_expert)},
              {"hits", u.hits.size() == u.routed.size() ? rows(u.hits, u.n_layer, u.n_expert) : nlohmann::json()}};
  }
  return {{"model", model},
          {"uptime_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()},
          {"requests_total", completions_},
          {"active", g.active},
          {"queue", g.queue},
          {"prompt_tokens_per_s", last_prompt_rate_},
          {"decode_tokens_per_s", last_decode_rate_},
          {"ttft_ms", last_ttft_ * 1000.0},
          {"tokens_total", prompt_tokens_ + generated_tokens_},
          {"expert", expert}};
}

}  // namespace strata::serve
