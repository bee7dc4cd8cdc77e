// The one thread that runs the engine: it takes jobs from the bounded queue in order, runs each on a free slot the
// prefix cache picks (reusing that slot's longest common prefix with the prompt), streams the tokens into the
// job's channel, and stops a job within one token when its client leaves, its time runs out or the server stops.
// With runtime.slots N, up to N jobs run at once: a new job's prompt is fed on its own slot between two decode
// steps, then every running job's next token goes into one step (Engine::step), and a finished job frees its slot
// at once.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "strata/engine.hpp"
#include "strata/prefix_cache.hpp"
#include "strata/serve/bounded_queue.hpp"
#include "strata/serve/job.hpp"
#include "strata/serve/job_runner.hpp"
#include "strata/serve/metrics.hpp"

namespace strata::serve {

class EngineWorker : public JobRunner {
 public:
  // `queue_capacity`: jobs that may wait beyond the running ones (serve.queue).
  EngineWorker(Engine& engine, size_t queue_capacity, ServerMetrics& metrics);
  ~EngineWorker() override;  // stop()
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // False when the queue is full (or the worker stopped): answer 503.
  bool submit(std::shared_ptr<Job> job) override;
  // Cancels the running jobs, ends the waiting ones with 503 and joins the thread. Idempotent.
  void stop() override;

  size_t queued() const override { return queue_.size(); }
  size_t active() const override;
  // The engine's expert routes as of the last job's end (the engine is only read between feeds, on its thread).
  ExpertUsage expert_usage() const override;

 private:
  // A job with a slot: its reply's state, and the token to feed in the next step.
  struct Running {
    std::shared_ptr<Job> job;
    uint32_t slot = 0;
    JobOutcome out;
    std::unique_ptr<Completion> completion;
    TokenId pending = kNoToken;
  };
  void loop();
  // Feeds the job's prompt on a free slot and samples its first token; false when it is already done (then
  // answered).
  bool start(Running& r);
  // One decode step of every running job; those that end are answered and leave `running_`.
  void step();
  // The engine failed under the job: a 500, and its slot's contents forgotten (finish() answers it).
  void fail(Running& r, const std::exception& e);
  // Records a job's end (prompt cache, metrics, usage) and answers it.
  void finish(Running& r);
  // Why a job stops early: the client left, its time ran out, the server stops.
  bool keep_going(Running& r, const GeneratedToken& token);

  Engine& engine_;
  ServerMetrics& metrics_;
  PrefixCache cache_;
  BoundedQueue<std::shared_ptr<Job>> queue_;
  std::vector<std::unique_ptr<Running>> running_;  // on the engine thread only
  std::atomic<bool> stopping_{false};
  mutable std::mutex usage_mutex_;
  ExpertUsage usage_;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace strata::serve
