// A job on an engine lane: the request line `strata engine` reads for it, and the engine's answer lines turned back
// into the job's reply (its ReplyChannel), as EngineWorker answers a job.
//
// The engine's lines carry token ids, but the reply's text is decoded here again from those ids with the job's own
// end tokens, stop strings and leading-space rule, so the reply is the one Completion gives for the same ids (the
// request line carries the job's end tokens and stop strings, so the engine stops where Completion would).
//
// A reply the engine ends too (max_tokens, a stop string) is answered at its done line, with the engine's timings,
// so that a client holding its answer finds the lane free (as EngineWorker frees a slot before it answers). One the
// engine does not end (a client gone, a timeout, shutdown) is answered at once; the desk then sends CANCEL, and
// the lane stays busy until the engine's done line (at its next token).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "strata/serve/job.hpp"
#include "strata/serve/metrics.hpp"
#include "strata/tokenizer.hpp"

namespace strata::serve {

// The request line for `job` under `id` ("prompt_ids", "stream": true; top_k capped at the vocabulary).
std::string engine_request_line(uint64_t id, const Job& job, uint32_t n_vocab);

class LaneReply {
 public:
  using Clock = std::chrono::steady_clock;

  // `id`: the id of the job's request line. The reply is counted in `metrics` when it is answered.
  LaneReply(uint64_t id, std::shared_ptr<Job> job, const Tokenizer& tokenizer, ServerMetrics& metrics);

  uint64_t id() const { return id_; }
  const std::shared_ptr<Job>& job() const { return job_; }

  // The engine's lines for this id: a token line's id, the done line, an error line's message.
  void token(TokenId id);
  void done(const nlohmann::json& line);
  void error(const std::string& message);
  // The lane died under the job: a 502 (the caller runs a job that has had no tokens again instead, once).
  void lane_died(const std::string& why);
  // Between tokens: ends the reply (with what it has) when its client left, its time ran out or `stopping`.
  void check(bool stopping);

  bool answered() const { return answered_; }
  // Whether anything went into the job's channel (then the job cannot be run again from the start).
  bool started() const { return pushed_ > 0; }
  // What the engine holds after the job: its prompt and the ids of its done line (else those seen here).
  std::vector<TokenId> conversation() const;

 private:
  bool keep_going(const GeneratedToken& token, bool stopping);
  std::string release(std::string text);
  // Completion::finish: the text held back goes out unless a stop string or a cancel ended it; then answer().
  void finish(StopCause cause);
  void answer(std::optional<ApiError> error);

  uint64_t id_;
  std::shared_ptr<Job> job_;
  const Tokenizer& tokenizer_;
  ServerMetrics& metrics_;
  StreamDecoder stream_;
  StopStrings stops_;
  bool strip_space_;
  JobOutcome out_;
  std::vector<TokenId> engine_ids_;  // the done line's generated_ids
  bool engine_done_ = false;
  bool answered_ = false;
  std::optional<StopCause> ended_;  // complete here; answered at the engine's done line
  size_t pushed_ = 0;
  Clock::time_point sent_, first_token_{}, last_token_{};
};

}  // namespace strata::serve
