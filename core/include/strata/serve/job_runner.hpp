// What the HTTP side needs from whatever runs its jobs: one engine in this process (EngineWorker) or the elastic
// pair's engine processes (ElasticDesk). The server parses, checks and queues through this and nothing else.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "strata/engine.hpp"
#include "strata/serve/api_error.hpp"
#include "strata/serve/job.hpp"

namespace strata::serve {

class JobRunner {
 public:
  virtual ~JobRunner() = default;

  // Why this runner cannot run the job as asked (answered as it is, before anything is queued); nullopt: it can.
  virtual std::optional<ApiError> refuse(const Job&) const { return std::nullopt; }
  // False when the queue is full (or the runner stopped): answer 503.
  virtual bool submit(std::shared_ptr<Job> job) = 0;
  // Cancels the running jobs, ends the waiting ones with 503 and waits for its threads. Idempotent.
  virtual void stop() = 0;

  virtual size_t queued() const = 0;  // jobs waiting
  virtual size_t active() const = 0;  // jobs running
  // The expert routes for /live and /metrics (0 x 0 when the runner does not see them).
  virtual ExpertUsage expert_usage() const = 0;
};

}  // namespace strata::serve
