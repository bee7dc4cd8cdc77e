// One completion request between the HTTP thread that took it and the engine thread that runs it: what to run,
// how to stop it, and the channel its tokens and its outcome come back through.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "strata/generate.hpp"
#include "strata/vision.hpp"
#include "strata/serve/api_error.hpp"
#include "strata/serve/peer_watch.hpp"

namespace strata::serve {

struct JobOutcome {
  CompletionResult result;
  size_t prompt_tokens = 0;
  bool timed_out = false;            // serve.request_timeout_s ran out: the reply ends where it was
  std::optional<ApiError> error;     // the engine failed, or the request expired waiting (nothing generated)
};

// Tokens as the engine thread makes them, then the outcome; the HTTP thread takes them in batches.
class ReplyChannel {
 public:
  void push(GeneratedToken token);
  void finish(JobOutcome outcome);

  struct Batch {
    std::vector<GeneratedToken> tokens;  // since the last take
    std::optional<JobOutcome> outcome;   // set once, after the last token
  };
  // Waits until there is something or `timeout` has passed.
  Batch take(std::chrono::milliseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<GeneratedToken> tokens_;
  std::optional<JobOutcome> outcome_;
  bool outcome_taken_ = false;
};

struct Job {
  std::vector<TokenId> prompt;  // rendered and encoded, BOS first where the vocabulary has one
  CompletionOptions options;    // its images' rows point into image_rows
  // Images: preprocessed by the HTTP thread (their tokens placed in the prompt, rows still empty), encoded by the
  // engine's thread on the engine's backend just before the prompt is fed (image_rows, which options.images then
  // point into); the prompt keyed by each image's bytes (what the prefix cache compares; empty without images: the
  // prompt is its own key), and the projector's time.
  const vision::Projector* projector = nullptr;
  std::vector<vision::ProjectorInput> image_inputs;
  std::vector<std::string> image_urls;  // the data URLs as sent: the elastic desk's lanes encode them themselves
  std::vector<vision::Embeddings> image_rows;
  std::vector<TokenId> cache_key;
  size_t image_tokens = 0;
  double image_seconds = 0.0;
  std::optional<double> pcie_frac;  // the engine's request option (hybrid path)
  std::chrono::steady_clock::time_point arrival, deadline;
  PeerWatch peer;
  std::atomic<bool> cancelled{false};  // the HTTP side saw the client leave
  std::atomic<int64_t> first_token_ns{-1};  // since arrival, set by the engine thread
  ReplyChannel channel;
};

}  // namespace strata::serve
