// The elastic pair's desk (serve.elastic.lanes 2): two `strata engine` processes behind one server, one request each.
//
// Lane 0, the lead, starts with the desk. Lane 1, the helper, sleeps: it has no process, so its card's memory is all
// given back. A request goes to the idle lane whose last conversation shares the longest prefix with its prompt
// (ties: the lead). When the lead is busy and the helper asleep, the helper wakes: the lead gets PEER_DETACH and
// POOL_HOLD n (between two of its windows), the helper's process starts, both get LINK_SERVE 1 when the pair has a
// link, and the helper takes the next request. After hold_s idle the helper's stdin is closed (it exits; SIGKILL
// after exit_grace) and the lead gets LINK_SERVE 0, POOL_HOLD 0 and PEER_ATTACH. More requests wait in the queue.
//
// A lane that dies: its job runs again from the queue's front when none of its tokens went out, else it ends with a
// 502. A dead helper is asleep again (the lead re-attaches); a dead lead is started again, and when that fails the
// waiting jobs get 503 (the next request tries again). "refused" answers to control lines (an engine on the CPU has
// no peer card or pool to hold) are logged, not fatal.
//
// Threads: each lane's reader thread relays its lines into the jobs' channels under the desk's mutex; one desk thread
// routes jobs, moves the helper between its phases and watches the timers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "strata/sampling.hpp"
#include "strata/serve/engine_lane.hpp"
#include "strata/serve/job_runner.hpp"
#include "strata/serve/lane_reply.hpp"
#include "strata/serve/metrics.hpp"
#include "strata/tokenizer.hpp"

namespace strata::serve {

struct DeskOptions {
  LaneCommand lead, helper;
  bool linked = false;    // the pair shares a peer link: LINK_SERVE lines on wake and sleep
  std::string link_file;  // removed when the desk ends (empty: none)
  double hold_s = 30;     // serve.elastic.hold_s
  size_t queue = 64;      // serve.queue: jobs waiting beyond the running ones
  uint32_t pool_hold = 1; // POOL_HOLD n for the lead while the helper runs
  // The launch's sampling defaults: what a request line cannot carry (the repetition penalty) is the engines'.
  SamplingParams sampling;
  std::chrono::milliseconds control_timeout{30'000};  // for a CTL answer
  std::chrono::milliseconds start_timeout{600'000};   // for a ready line
  std::chrono::milliseconds exit_grace{10'000};       // from closing a lane's stdin to SIGKILL
  std::chrono::milliseconds wake_retry{30'000};       // no new wake this long after one failed
};

// POOL_HOLD's n: half of the machine's hardware threads, at least 1.
uint32_t default_pool_hold();

class ElasticDesk : public JobRunner {
 public:
  // Starts the lead and waits for its ready line. Throws strata::Error with the lane's reason when it does not
  // start (its exit status and last stderr lines).
  ElasticDesk(const Tokenizer& tokenizer, DeskOptions options, ServerMetrics& metrics);
  ~ElasticDesk() override;  // stop()
  ElasticDesk(const ElasticDesk&) = delete;
  ElasticDesk& operator=(const ElasticDesk&) = delete;

  // Log-probabilities (the engine's lines carry none) and a repetition penalty other than the launch's.
  std::optional<ApiError> refuse(const Job& job) const override;
  bool submit(std::shared_ptr<Job> job) override;
  // Running jobs end as cancelled, waiting ones with 503; the lanes' stdin is closed (SIGKILL after a grace); the
  // link file is removed.
  void stop() override;
  size_t queued() const override;
  size_t active() const override;
  ExpertUsage expert_usage() const override { return {}; }  // the engines' routes stay in their processes

  // What a lane is doing, for tests and logs.
  struct LaneState {
    bool awake = false;  // has a process that said it was ready
    bool busy = false;   // a job's request is on it
    pid_t pid = -1;
  };
  LaneState lane_state(size_t lane) const;

 private:
  using Clock = std::chrono::steady_clock;

  struct PendingControl {
    std::string line;
    Clock::time_point deadline;
  };
  struct Waiting {
    std::shared_ptr<Job> job;
    int deaths = 0;  // lanes that died under it before its first token
  };
  struct Lane {
    const char* name = "";
    const LaneCommand* command = nullptr;
    std::unique_ptr<EngineLane> process;  // null: no process
    uint64_t generation = 0;              // bumped with each process, so a gone one's events are ignored
    bool ready = false;     // its ready line came
    bool exited = false;    // its process ended (handled by the desk thread, which then buries it)
    bool closing = false;   // asked to end (stdin closed or killed)
    bool broken = false;    // a write failed: it is ending
    bool detached = false;  // the lead: PEER_DETACH went out since it started or last re-attached
    std::string exit_reason;
    Clock::time_point spawned_at{}, ready_at{}, kill_at{};
    std::unique_ptr<LaneReply> reply;     // the job on it; kept after an early answer until its done line
    bool cancel_sent = false;             // CANCEL went out for it (answered early: the client left, its time ran out)
    int reply_deaths = 0;
    std::vector<TokenId> conversation;    // what its last job left in the engine
    Clock::time_point idle_since{};
    std::deque<PendingControl> controls;  // sent, not yet answered, in order
  };
  // The helper's way from asleep to awake and back.
  enum class Phase { Asleep, Detaching, Starting, Linking, Awake, Sleeping };

  void loop();
  // On a lane's reader thread.
  void on_output(size_t lane, uint64_t generation, LaneOutput out);
  bool relay(Lane& lane, const nlohmann::json& line);  // true when the lane is free again
  void answer_control(Lane& lane, const std::string& line);
  void lane_ended(Lane& lane);  // its Exited: the job on it goes back or fails

  // On the desk thread, under the mutex.
  void step(Clock::time_point now);
  void sweep(Clock::time_point now);
  void step_helper(Clock::time_point now);
  void step_lead(Clock::time_point now);
  void dispatch(Clock::time_point now);
  bool takes_jobs(const Lane& lane) const;
  void begin_wake(Clock::time_point now);
  void wake_failed(const std::string& why, Clock::time_point now);
  void helper_gone(Clock::time_point now);  // the helper's process ended: asleep, the lead re-attaches
  void detach_lead(Clock::time_point now);  // PEER_DETACH, POOL_HOLD n (and LINK_SERVE 1 while the helper is linked)
  Clock::time_point next_deadline(Clock::time_point now) const;

  // Any thread, under the mutex.
  bool spawn(Lane& lane, std::string& why);
  void control(Lane& lane, const std::string& line, Clock::time_point now);
  void bury(Lane& lane);  // its process object goes to graveyard_, destroyed outside the mutex
  // A waiting job whose client left or whose time ran out: answered, true.
  bool drop_if_done(const std::shared_ptr<Job>& job, Clock::time_point now);
  void fail_waiting(const ApiError& error);
  size_t running() const;

  const Tokenizer& tokenizer_;
  const DeskOptions options_;
  ServerMetrics& metrics_;
  std::mutex stop_mutex_;  // a second stop() returns once the first is done
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Lane lanes_[2];
  Phase phase_ = Phase::Asleep;
  bool linked_now_ = false;  // LINK_SERVE 1 went out in this wake
  bool lead_down_ = false;   // the lead could not be started again; the next job tries once more
  bool lead_retry_ = false;
  Clock::time_point wake_begin_{}, detach_done_{}, start_done_{}, wake_allowed_{};
  std::deque<Waiting> waiting_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;
  std::vector<std::unique_ptr<EngineLane>> graveyard_;
  std::thread thread_;
};

}  // namespace strata::serve
