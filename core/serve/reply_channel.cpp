#include "strata/serve/job.hpp"

namespace strata::serve {

void ReplyChannel::push(GeneratedToken token) {
  {
    std::lock_guard lock(mutex_);
    tokens_.push_back(std::move(token));
  }
  ready_.notify_all();
}

void ReplyChannel::finish(JobOutcome outcome) {
  {
    std::lock_guard lock(mutex_);
    outcome_ = std::move(outcome);
  }
  ready_.notify_all();
}

ReplyChannel::Batch ReplyChannel::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !tokens_.empty() || (outcome_ && !outcome_taken_); });
  Batch b;
  b.tokens.assign(std::make_move_iterator(tokens_.begin()), std::make_move_iterator(tokens_.end()));
  tokens_.clear();
  if (outcome_ && !outcome_taken_) {
    b.outcome = std::move(outcome_);
    outcome_taken_ = true;
  }
  return b;
}

}  // namespace strata::serve
