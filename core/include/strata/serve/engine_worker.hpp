// The one thread that runs the engine: it takes jobs from the bounded queue in order, runs each on the slot the
// prefix cache picks (reusing that slot's longest common prefix with the prompt), streams the tokens into the
// job's channel, and stops a job within one token when its client leaves, its time runs out or the server stops.
#pragma once

#include <memory>
#include <mutex>
#include <thread>

#include "strata/engine.hpp"
#include "strata/prefix_cache.hpp"
#include "strata/serve/bounded_queue.hpp"
#include "strata/serve/job.hpp"
#include "strata/serve/metrics.hpp"

namespace strata::serve {

class EngineWorker {
 public:
  // `queue_capacity`: jobs that may wait while one runs (serve.queue).
  EngineWorker(Engine& engine, size_t queue_capacity, ServerMetrics& metrics);
  ~EngineWorker();  // stop()
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // False when the queue is full (or the worker stopped): answer 503.
  bool submit(std::shared_ptr<Job> job);
  // Cancels the running job, ends the waiting ones with 503 and joins the thread. Idempotent.
  void stop();

  size_t queued() const { return queue_.size(); }
  size_t active() const;
  // The engine's expert routes as of the last job's end (the engine is only read between feeds, on its thread).
  ExpertUsage expert_usage() const;

 private:
  void loop();
  JobOutcome run(Job& job);

  Engine& engine_;
  ServerMetrics& metrics_;
  PrefixCache cache_;
  BoundedQueue<std::shared_ptr<Job>> queue_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex usage_mutex_;
  ExpertUsage usage_;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace strata::serve
