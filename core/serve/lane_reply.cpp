#include "strata/serve/lane_reply.hpp"

#include <algorithm>

#include "strata/log.hpp"
#include "strata/prompt_images.hpp"

namespace strata::serve {
namespace {

using json = nlohmann::json;

constexpr int64_t kMostTokens = int64_t{1} << 30;  // the engine's bound on max_tokens

double seconds(LaneReply::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string engine_request_line(uint64_t id, const Job& job, uint32_t n_vocab) {
  const CompletionOptions& o = job.options;
  json stop = json::array();
  for (const std::string& s : o.stop) {
    if (!s.empty()) stop.push_back(s);  // the engine refuses an empty one; Completion ignores it
  }
  // Images: each one's tokens (<|vision_start|>, placeholders, <|vision_end|>) become a -1 mark, and its data URL
  // goes along; the engine places and encodes it on its own backend, keyed by the same bytes.
  std::vector<TokenId> ids;
  if (job.options.images.empty()) {
    ids = job.prompt;
  } else {
    size_t at = 0;
    for (const PromptImage& im : job.options.images) {
      ids.insert(ids.end(), job.prompt.begin() + static_cast<std::ptrdiff_t>(at),
                 job.prompt.begin() + static_cast<std::ptrdiff_t>(im.at - 1));
      ids.push_back(kImageMark);
      at = im.at + size_t{im.tokens.nx} * im.tokens.ny + 1;
    }
    ids.insert(ids.end(), job.prompt.begin() + static_cast<std::ptrdiff_t>(at), job.prompt.end());
  }
  json line = {{"id", id},
                     {"prompt_ids", ids},
                     {"max_tokens", std::min<int64_t>(o.max_tokens, kMostTokens)},
                     {"temperature", o.sampling.temperature},
                     {"top_k", std::min<int64_t>(o.sampling.top_k, n_vocab)},
                     {"top_p", o.sampling.top_p},
                     {"min_p", o.sampling.min_p},
                     {"seed", o.sampling.seed},
                     {"stop", stop},
                     {"end_tokens", o.end_tokens},
                     {"stream", true}};
  if (!job.image_urls.empty()) line["images"] = job.image_urls;
  // Only when set: the launch has no such defaults, and a line without them is what engines before them read.
  if (o.sampling.frequency_penalty != 0.0f) line["frequency_penalty"] = o.sampling.frequency_penalty;
  if (o.sampling.presence_penalty != 0.0f) line["presence_penalty"] = o.sampling.presence_penalty;
  if (!o.sampling.logit_bias.empty()) {
    json bias = json::object();
    for (const auto& [token, b] : o.sampling.logit_bias) bias[std::to_string(token)] = b;
    line["logit_bias"] = bias;
  }
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

LaneReply::LaneReply(uint64_t id, std::shared_ptr<Job> job, const Tokenizer& tokenizer, ServerMetrics& metrics)
    : id_(id),
      job_(std::move(job)),
      tokenizer_(tokenizer),
      metrics_(metrics),
      stream_(tokenizer),
      stops_(job_->options.stop),
      strip_space_(job_->options.strip_leading_space),
      sent_(Clock::now()) {
  out_.prompt_tokens = job_->prompt.size();
}

bool LaneReply::keep_going(const GeneratedToken& token, bool stopping) {
  Job& job = *job_;
  const auto now = Clock::now();
  if (token.id != kNoToken) {
    int64_t unset = -1;
    job.first_token_ns.compare_exchange_strong(
        unset, std::chrono::duration_cast<std::chrono::nanoseconds>(now - job.arrival).count());
  }
  if (token.id != kNoToken || !token.text.empty()) {
    job.channel.push(token);
    ++pushed_;
  }
  if (now >= job.deadline) out_.timed_out = true;
  return !(out_.timed_out || stopping || job.cancelled || job.peer.gone());
}

std::string LaneReply::release(std::string text) {
  if (strip_space_ && !text.empty()) {
    if (text.front() == ' ') text.erase(0, 1);
    strip_space_ = false;
  }
  std::string shown = stops_.push(text);
  out_.result.text += shown;
  return shown;
}

void LaneReply::token(TokenId id) {
  if (answered_ || ended_) return;
  const auto now = Clock::now();
  if (first_token_ == Clock::time_point{}) first_token_ = now;
  last_token_ = now;
  if (id < 0 || static_cast<size_t>(id) >= tokenizer_.size()) {
    error("it sent token " + std::to_string(id) + ", outside the vocabulary");
    return;
  }
  const CompletionOptions& o = job_->options;
  if (id == tokenizer_.eos() || std::find(o.end_tokens.begin(), o.end_tokens.end(), id) != o.end_tokens.end()) {
    finish(StopCause::EndOfText);
    return;
  }
  out_.result.generated_ids.push_back(id);
  GeneratedToken step;
  step.id = id;
  step.text = release(stream_.push(id));
  if (!keep_going(step, false)) {
    finish(StopCause::Cancelled);
  } else if (stops_.stopped()) {
    ended_ = StopCause::StopString;  // the engine stops there too: its done line follows
  } else if (o.max_tokens >= 0 && out_.result.generated_ids.size() >= static_cast<size_t>(o.max_tokens)) {
    ended_ = StopCause::MaxTokens;
  }
}

void LaneReply::done(const json& line) {
  engine_done_ = true;
  if (const auto ids = line.find("generated_ids"); ids != line.end() && ids->is_array()) {
    for (const json& t : *ids) {
      if (t.is_number_integer()) engine_ids_.push_back(t.get<TokenId>());
    }
  }
  if (line.value("prompt_seconds", json()).is_number()) out_.result.prompt_seconds = line["prompt_seconds"].get<double>();
  if (line.value("decode_seconds", json()).is_number()) out_.result.decode_seconds = line["decode_seconds"].get<double>();
  if (line.value("reused_tokens", json()).is_number_unsigned()) {
    out_.result.reused_tokens = line["reused_tokens"].get<size_t>();  // the engine kept that much of its last turn
  }
  if (answered_) return;
  if (ended_) return finish(*ended_);
  const std::string reason = line.value("finish_reason", json()).is_string() ? line["finish_reason"].get<std::string>() : "";
  const int max_tokens = job_->options.max_tokens;
  const bool all_tokens = max_tokens >= 0 && out_.result.generated_ids.size() >= static_cast<size_t>(max_tokens);
  if (reason == "stop") {
    finish(StopCause::EndOfText);  // the engine's EOS (its stop strings are ours, and would have ended it here)
  } else if (reason == "cancelled") {
    finish(StopCause::Cancelled);
  } else {
    finish(all_tokens || reason != "length" ? StopCause::MaxTokens : StopCause::Context);
  }
}

void LaneReply::error(const std::string& message) {
  if (answered_) return;
  if (ended_) return finish(*ended_);  // the reply was whole already
  log::error("strata serve: a completion failed on an engine lane: " + message);
  answer(ApiError{500, "the engine failed: " + message, "server_error", {}, "engine_error"});
}

void LaneReply::lane_died(const std::string& why) {
  if (answered_) return;
  if (ended_) return finish(*ended_);  // whole already: only its done line was lost
  const char* when = started() ? "the engine lane died mid-reply: "
                               : "the engine lane died before the reply's first token, as one did before: ";
  answer(ApiError{502, when + why, "server_error", {}, "engine_died"});
}

void LaneReply::check(bool stopping) {
  if (answered_) return;
  const bool late = Clock::now() >= job_->deadline;
  if (!(late || stopping || job_->cancelled || job_->peer.gone())) return;
  if (ended_) return finish(*ended_);  // whole already: only the engine's done line was still to come
  out_.timed_out = late;
  finish(StopCause::Cancelled);
}

std::vector<TokenId> LaneReply::conversation() const {
  std::vector<TokenId> held = job_->cache_key.empty() ? job_->prompt : job_->cache_key;
  const std::vector<TokenId>& reply = engine_done_ ? engine_ids_ : out_.result.generated_ids;
  held.insert(held.end(), reply.begin(), reply.end());
  return held;
}

void LaneReply::finish(StopCause cause) {
  out_.result.stop = cause;
  if (cause != StopCause::StopString && cause != StopCause::Cancelled) {
    GeneratedToken tail;
    tail.text = release(stream_.finish());
    const std::string rest = stops_.finish();
    out_.result.text += rest;
    tail.text += rest;
    keep_going(tail, false);
  }
  answer(std::nullopt);
}

void LaneReply::answer(std::optional<ApiError> error) {
  answered_ = true;
  JobOutcome out = out_;
  const size_t n = out.result.generated_ids.size();
  // Generated tokens fed back: all of them after an end token, else all but the last sampled.
  out.result.decode_tokens = out.result.stop == StopCause::EndOfText ? n : (n > 0 ? n - 1 : 0);
  if (!engine_done_ && first_token_ != Clock::time_point{}) {
    // Answered before the engine's done line (an end token, a cancel): timed here, pipes included.
    out.result.prompt_seconds = seconds(first_token_ - sent_);
    out.result.decode_seconds = seconds(last_token_ - first_token_);
  }
  if (error) {
    out.error = std::move(error);
  } else {
    CompletionStats stats;
    stats.prompt_tokens = job_->prompt.size();
    stats.cached_tokens = out.result.reused_tokens;
    stats.generated_tokens = n;
    stats.prompt_seconds = out.result.prompt_seconds;
    stats.decode_tokens = out.result.decode_tokens;
    stats.decode_seconds = out.result.decode_seconds;
    stats.images = job_->image_urls.size();
    stats.image_tokens = job_->image_tokens;  // the lane's encode time is its own (in its prompt_seconds)
    const int64_t ttft = job_->first_token_ns.load();
    stats.ttft_seconds = ttft >= 0 ? static_cast<double>(ttft) * 1e-9 : -1.0;
    metrics_.record(stats);
  }
  job_->channel.finish(std::move(out));
}

}  // namespace strata::serve
