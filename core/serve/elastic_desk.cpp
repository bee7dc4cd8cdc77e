#include "strata/serve/elastic_desk.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/prefix_cache.hpp"

namespace strata::serve {
namespace {

using json = nlohmann::json;

constexpr std::chrono::milliseconds kTick{100};             // how often running and waiting jobs are looked at
constexpr std::chrono::milliseconds kShutdownGrace{2'000};  // a busy engine's time to end before SIGKILL
constexpr int kMostDeaths = 2;                              // lanes a job may see die before its first token

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

double since(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

uint32_t default_pool_hold() { return std::max(1u, std::thread::hardware_concurrency() / 2); }

ElasticDesk::ElasticDesk(const Tokenizer& tokenizer, DeskOptions options, ServerMetrics& metrics)
    : tokenizer_(tokenizer), options_(std::move(options)), metrics_(metrics) {
  lanes_[0].name = "lead";
  lanes_[0].command = &options_.lead;
  lanes_[1].name = "helper";
  lanes_[1].command = &options_.helper;
  std::error_code ignored;
  if (!options_.link_file.empty()) std::filesystem::remove(options_.link_file, ignored);  // an earlier process's
  metrics_.desk_started();

  std::unique_lock lock(mutex_);
  Lane& lead = lanes_[0];
  std::string why;
  if (spawn(lead, why)) {
    changed_.wait_until(lock, Clock::now() + options_.start_timeout, [&] { return lead.ready || lead.exited; });
    if (!lead.ready) {
      why = lead.exited ? "it " + lead.exit_reason
                        : "it did not say it was ready within " +
                              secs(std::chrono::duration<double>(options_.start_timeout).count());
    }
  }
  if (!lead.ready) {
    bury(lead);
    std::vector<std::unique_ptr<EngineLane>> dead = std::move(graveyard_);
    lock.unlock();
    dead.clear();  // killed and reaped, outside the lock its reader takes
    if (!options_.link_file.empty()) std::filesystem::remove(options_.link_file, ignored);
    throw Error("the lead engine lane did not start: " + why);
  }
  lead.idle_since = Clock::now();
  log::info("strata serve: the lead engine lane is ready (pid " + std::to_string(lead.process->pid()) + ", " +
            secs(since(lead.spawned_at, lead.ready_at)) + "); the helper sleeps");
  lock.unlock();
  thread_ = std::thread([this] { loop(); });
}

ElasticDesk::~ElasticDesk() { stop(); }

std::optional<ApiError> ElasticDesk::refuse(const Job& job) const {
  if (job.options.logprobs) {
    return ApiError{400, "logprobs are not available with serve.elastic.lanes 2 (the engine lanes' lines carry none)",
                    "invalid_request_error", "logprobs", "unsupported_value"};
  }
  if (job.options.sampling.repeat_penalty != options_.sampling.repeat_penalty) {
    return ApiError{400, "repeat_penalty cannot be set per request with serve.elastic.lanes 2: the engine lanes use the "
                         "launch's (sampling.repeat_penalty)",
                    "invalid_request_error", "repeat_penalty", "unsupported_value"};
  }
  return std::nullopt;
}

bool ElasticDesk::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || waiting_.size() + running() >= options_.queue + 2) return false;
    waiting_.push_back({std::move(job), 0});
    if (lead_down_) lead_retry_ = true;
  }
  changed_.notify_all();
  return true;
}

void ElasticDesk::stop() {
  std::lock_guard stop_lock(stop_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    fail_waiting({503, "the server is shutting down", "server_error", {}, "shutting_down"});
    for (Lane& lane : lanes_) {
      if (lane.reply) lane.reply->check(true);  // answered as cancelled, with what it has
    }
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<std::unique_ptr<EngineLane>> dead;
  {
    // End of input ends an idle engine at once; a busy one finishes its request first, which is not waited for.
    std::unique_lock lock(mutex_);
    const auto all_exited = [&] {
      return std::all_of(std::begin(lanes_), std::end(lanes_), [](const Lane& l) { return !l.process || l.exited; });
    };
    for (Lane& lane : lanes_) {
      if (lane.process) lane.process->close_input();
    }
    changed_.wait_for(lock, kShutdownGrace, all_exited);
    for (Lane& lane : lanes_) {
      if (lane.process && !lane.exited) lane.process->kill();
    }
    for (Lane& lane : lanes_) bury(lane);
    dead = std::move(graveyard_);
  }
  dead.clear();
  std::error_code ignored;
  if (!options_.link_file.empty()) std::filesystem::remove(options_.link_file, ignored);
}

size_t ElasticDesk::queued() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

size_t ElasticDesk::active() const {
  std::lock_guard lock(mutex_);
  return running();
}

ElasticDesk::LaneState ElasticDesk::lane_state(size_t lane) const {
  std::lock_guard lock(mutex_);
  const Lane& l = lanes_[lane];
  LaneState s;
  s.awake = l.process && l.ready && !l.exited;
  s.busy = l.reply != nullptr;
  s.pid = l.process ? l.process->pid() : -1;
  return s;
}

size_t ElasticDesk::running() const {
  size_t n = 0;
  for (const Lane& lane : lanes_) n += lane.reply && !lane.reply->answered() ? 1 : 0;
  return n;
}

// ---- the lanes' reader threads

void ElasticDesk::on_output(size_t index, uint64_t generation, LaneOutput out) {
  bool changed = true;
  {
    std::lock_guard lock(mutex_);
    Lane& lane = lanes_[index];
    if (lane.generation != generation || !lane.process) return;  // a process the desk has let go
    switch (out.kind) {
      case LaneOutput::Kind::Ready:
        if (!lane.ready) {
          lane.ready = true;
          lane.ready_at = Clock::now();
          lane.idle_since = lane.ready_at;
        }
        break;
      case LaneOutput::Kind::Control: answer_control(lane, out.line); break;
      case LaneOutput::Kind::Reply: changed = relay(lane, out.json); break;
      case LaneOutput::Kind::Other:
        log::warn(std::string("strata serve: the ") + lane.name + " engine lane printed: " + out.line.substr(0, 200));
        changed = false;
        break;
      case LaneOutput::Kind::Exited:
        lane.exited = true;
        lane.exit_reason = out.line;
        lane_ended(lane);
        break;
    }
  }
  if (changed) changed_.notify_all();
}

bool ElasticDesk::relay(Lane& lane, const json& line) {
  const json& id = line["id"];
  if (!lane.reply || !id.is_number_unsigned() || id.get<uint64_t>() != lane.reply->id()) {
    log::warn(std::string("strata serve: the ") + lane.name + " engine lane answered a request it was not given: " +
              line.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200));
    return false;
  }
  if (line.contains("token")) {
    if (line["token"].is_number_integer()) lane.reply->token(line["token"].get<TokenId>());
    return false;  // the desk thread has nothing to do for a token
  }
  const auto done = line.find("done");
  if (done != line.end() && done->is_boolean() && done->get<bool>()) {
    lane.reply->done(line);
    lane.conversation = lane.reply->conversation();
  } else if (line.contains("error")) {
    const json& e = line["error"];
    lane.reply->error(e.is_string() ? e.get<std::string>() : e.dump(-1, ' ', false, json::error_handler_t::replace));
    lane.conversation.clear();
  } else {
    return false;
  }
  lane.reply.reset();
  lane.idle_since = Clock::now();
  return true;
}

void ElasticDesk::answer_control(Lane& lane, const std::string& line) {
  // "CTL <line> done: ...", "CTL <line> refused: ...; nothing changed", or "CTL ERR <why>" (for the oldest).
  auto it = std::find_if(lane.controls.begin(), lane.controls.end(),
                         [&](const PendingControl& c) { return line.starts_with("CTL " + c.line + " "); });
  const bool error = line.starts_with("CTL ERR");
  if (it == lane.controls.end() && error && !lane.controls.empty()) it = lane.controls.begin();
  const std::string who = std::string("strata serve: the ") + lane.name + " engine lane: ";
  if (it == lane.controls.end()) {
    log::warn(who + "an answer no control line waits for (one that timed out?): " + line);
    return;
  }
  lane.controls.erase(it);
  if (error || line.find(" refused: ") != std::string::npos) {
    log::warn(who + line + " (the desk goes on)");
  } else {
    log::debug(who + line);
  }
}

void ElasticDesk::lane_ended(Lane& lane) {
  lane.controls.clear();
  lane.conversation.clear();
  if (!lane.reply) return;
  LaneReply& reply = *lane.reply;
  if (!reply.answered() && !reply.started() && !stopping_ && lane.reply_deaths + 1 < kMostDeaths) {
    // Nothing went out yet: the job runs again, first in line (no lost work).
    log::warn(std::string("strata serve: the ") + lane.name + " engine lane died before its job's first token; "
              "the job runs again");
    waiting_.push_front({reply.job(), lane.reply_deaths + 1});
  } else {
    reply.lane_died(lane.exit_reason);
  }
  lane.reply.reset();
}

// ---- the desk thread

void ElasticDesk::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    step(Clock::now());
    if (!graveyard_.empty()) {
      std::vector<std::unique_ptr<EngineLane>> dead = std::move(graveyard_);
      graveyard_.clear();
      lock.unlock();
      dead.clear();  // joins their reader threads, which take the mutex
      lock.lock();
      continue;
    }
    changed_.wait_until(lock, next_deadline(Clock::now()));
  }
}

void ElasticDesk::step(Clock::time_point now) {
  sweep(now);
  step_lead(now);
  step_helper(now);
  dispatch(now);
}

void ElasticDesk::sweep(Clock::time_point now) {
  for (Lane& lane : lanes_) {
    // A job whose client left or whose time ran out while no token came (a long prompt, a stuck engine).
    if (lane.reply) lane.reply->check(false);
    // Answered before the engine's done line: the engine stops it at its next token and the lane frees.
    if (lane.reply && lane.reply->answered() && !lane.cancel_sent) {
      control(lane, "CANCEL " + std::to_string(lane.reply->id()), now);
      lane.cancel_sent = true;
    }
    while (!lane.controls.empty() && now >= lane.controls.front().deadline) {
      log::warn(std::string("strata serve: the ") + lane.name + " engine lane did not answer '" +
                lane.controls.front().line + "' within " +
                secs(std::chrono::duration<double>(options_.control_timeout).count()) + "; the desk goes on");
      lane.controls.pop_front();
    }
  }
  std::erase_if(waiting_, [&](const Waiting& w) { return drop_if_done(w.job, now); });
}

void ElasticDesk::step_lead(Clock::time_point now) {
  Lane& lead = lanes_[0];
  std::string failed;
  if (lead.process && lead.exited) {
    const bool was_ready = lead.ready;
    const std::string why = lead.exit_reason;
    bury(lead);
    if (was_ready) {
      log::error("strata serve: the lead engine lane " + why + "; starting it again");
      metrics_.record_desk(ServerMetrics::DeskEvent::LaneDied);
    } else {
      failed = "it " + why;
    }
  }
  if (failed.empty() && !lead.process && !stopping_ && (!lead_down_ || lead_retry_)) {
    lead_retry_ = false;
    if (spawn(lead, failed)) lead_down_ = false;
  }
  if (!failed.empty()) {
    log::error("strata serve: the lead engine lane did not start again: " + failed + "; the waiting requests get 503");
    lead_down_ = true;
    fail_waiting({503, "no engine lane can take the request: the lead engine did not start again (" + failed + ")",
                  "server_error", {}, "engine_down"});
    return;
  }
  if (lead.process && !lead.ready && !lead.exited && !lead.closing && now >= lead.spawned_at + options_.start_timeout) {
    lead.exit_reason = "did not say it was ready in time";
    lead.closing = true;
    lead.process->kill();
  }
  // A lead started again while the helper runs: it lets go of the helper's card as the first one did.
  if (lead.process && lead.ready && !lead.exited && !lead.detached &&
      (phase_ == Phase::Starting || phase_ == Phase::Linking || phase_ == Phase::Awake)) {
    detach_lead(now);
  }
}

void ElasticDesk::step_helper(Clock::time_point now) {
  Lane& helper = lanes_[1];
  Lane& lead = lanes_[0];
  switch (phase_) {
    case Phase::Asleep: return;
    case Phase::Detaching: {
      if (!lead.controls.empty()) return;  // PEER_DETACH and POOL_HOLD answered (or timed out): the card is free
      detach_done_ = now;
      std::string why;
      if (!spawn(helper, why)) return wake_failed(why, now);
      phase_ = Phase::Starting;
      return;
    }
    case Phase::Starting:
      if (helper.exited) {
        const std::string why = "it " + helper.exit_reason;
        bury(helper);
        return wake_failed(why, now);
      }
      if (!helper.ready) {
        if (!helper.closing && now >= helper.spawned_at + options_.start_timeout) {
          helper.exit_reason = "did not say it was ready in time";
          helper.closing = true;
          helper.process->kill();
        }
        return;
      }
      start_done_ = now;
      if (options_.linked) {
        control(lead, "LINK_SERVE 1", now);
        control(helper, "LINK_SERVE 1", now);
        linked_now_ = true;
        phase_ = Phase::Linking;
        return;
      }
      break;  // awake now
    case Phase::Linking:
      if (helper.exited) break;  // handled as Awake's death below
      if (!helper.controls.empty() || !lead.controls.empty()) return;
      break;
    case Phase::Awake:
    case Phase::Sleeping: break;
  }
  if (phase_ == Phase::Starting || phase_ == Phase::Linking) {
    if (!helper.exited) {
      phase_ = Phase::Awake;
      helper.idle_since = now;
      metrics_.record_desk(ServerMetrics::DeskEvent::Wake);
      log::info("strata serve: the helper engine lane woke in " + secs(since(wake_begin_, now)) + " (detach " +
                secs(since(wake_begin_, detach_done_)) + ", start " + secs(since(detach_done_, start_done_)) +
                ", link " + secs(options_.linked ? since(start_done_, now) : 0.0) + ")");
    } else {
      phase_ = Phase::Awake;  // it died while linking: as a death when awake
    }
  }
  if (phase_ == Phase::Awake) {
    if (helper.exited) {
      log::error("strata serve: the helper engine lane " + helper.exit_reason + "; it sleeps until a later request");
      metrics_.record_desk(ServerMetrics::DeskEvent::LaneDied);
      wake_allowed_ = now + options_.wake_retry;  // one that dies is likely to die again
      bury(helper);
      return helper_gone(now);
    }
    const auto hold = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.hold_s));
    if (!helper.reply && now >= helper.idle_since + hold) {
      log::info("strata serve: the helper engine lane sleeps after " + secs(options_.hold_s) + " idle");
      helper.process->close_input();
      helper.closing = true;
      helper.kill_at = now + options_.exit_grace;
      phase_ = Phase::Sleeping;
    }
    return;
  }
  // Sleeping: its stdin is closed; it exits (or is killed after exit_grace).
  if (helper.exited) {
    metrics_.record_desk(ServerMetrics::DeskEvent::Sleep);
    bury(helper);
    return helper_gone(now);
  }
  if (now >= helper.kill_at) {
    helper.process->kill();
    helper.kill_at = Clock::time_point::max();
  }
}

void ElasticDesk::dispatch(Clock::time_point now) {
  while (!waiting_.empty() && !stopping_) {
    Waiting w = waiting_.front();
    int best = -1;
    size_t best_prefix = 0;
    for (int i = 0; i < 2; ++i) {
      if (!takes_jobs(lanes_[i])) continue;
      const size_t prefix =
          common_prefix(lanes_[i].conversation, w.job->cache_key.empty() ? w.job->prompt : w.job->cache_key);
      if (best < 0 || prefix > best_prefix) {  // ties: the lead, which comes first
        best = i;
        best_prefix = prefix;
      }
    }
    if (best < 0) {
      const Lane& lead = lanes_[0];
      if (phase_ == Phase::Asleep && lead.ready && !lead.exited && lead.reply && now >= wake_allowed_) begin_wake(now);
      return;
    }
    waiting_.pop_front();
    Lane& lane = lanes_[best];
    const uint64_t id = next_id_++;
    if (!lane.process->send(engine_request_line(id, *w.job, static_cast<uint32_t>(tokenizer_.size())))) {
      lane.broken = true;  // it no longer reads: it is ending, and its Exited comes next
      waiting_.push_front(std::move(w));
      continue;
    }
    lane.reply = std::make_unique<LaneReply>(id, w.job, tokenizer_, metrics_);
    lane.cancel_sent = false;
    lane.reply_deaths = w.deaths;
  }
}

bool ElasticDesk::takes_jobs(const Lane& lane) const {
  if (!lane.process || !lane.ready || lane.exited || lane.closing || lane.broken || lane.reply) return false;
  return &lane == &lanes_[0] || phase_ == Phase::Awake;
}

void ElasticDesk::begin_wake(Clock::time_point now) {
  log::info("strata serve: a request waits while the lead is busy: waking the helper engine lane");
  wake_begin_ = now;
  detach_done_ = start_done_ = now;
  phase_ = Phase::Detaching;
  detach_lead(now);
}

void ElasticDesk::detach_lead(Clock::time_point now) {
  Lane& lead = lanes_[0];
  control(lead, "PEER_DETACH", now);
  control(lead, "POOL_HOLD " + std::to_string(options_.pool_hold), now);
  if (linked_now_) control(lead, "LINK_SERVE 1", now);
  lead.detached = true;
}

void ElasticDesk::wake_failed(const std::string& why, Clock::time_point now) {
  log::error("strata serve: the helper engine lane did not start: " + why + "; the lead serves alone for " +
             secs(std::chrono::duration<double>(options_.wake_retry).count()));
  metrics_.record_desk(ServerMetrics::DeskEvent::FailedWake);
  wake_allowed_ = now + options_.wake_retry;
  helper_gone(now);
}

void ElasticDesk::helper_gone(Clock::time_point now) {
  phase_ = Phase::Asleep;
  Lane& lead = lanes_[0];
  if (lead.process && !lead.exited && lead.detached) {
    // The helper's card is free again: the lead takes it back as its peer tier, between two of its windows.
    if (linked_now_) control(lead, "LINK_SERVE 0", now);
    control(lead, "POOL_HOLD 0", now);
    control(lead, "PEER_ATTACH", now);
  }
  lead.detached = false;
  linked_now_ = false;
}

ElasticDesk::Clock::time_point ElasticDesk::next_deadline(Clock::time_point now) const {
  Clock::time_point next = now + std::chrono::hours(1);
  const auto soon = [&](Clock::time_point t) { next = std::min(next, t); };
  if (!waiting_.empty() || running() > 0) soon(now + kTick);
  for (const Lane& lane : lanes_) {
    for (const PendingControl& c : lane.controls) soon(c.deadline);
    if (lane.process && !lane.ready && !lane.exited) soon(lane.spawned_at + options_.start_timeout);
  }
  const Lane& helper = lanes_[1];
  if (phase_ == Phase::Awake && !helper.reply) {
    soon(helper.idle_since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.hold_s)));
  }
  if (phase_ == Phase::Sleeping) soon(helper.kill_at);
  return std::max(next, now);
}

// ---- under the mutex, any thread

bool ElasticDesk::spawn(Lane& lane, std::string& why) {
  const size_t index = static_cast<size_t>(&lane - lanes_);
  const uint64_t generation = ++lane.generation;
  try {
    lane.process = std::make_unique<EngineLane>(lane.name, *lane.command, [this, index, generation](LaneOutput out) {
      on_output(index, generation, std::move(out));
    });
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
  // Its reader waits for the mutex this thread holds, so nothing of the new process is seen before this.
  lane.ready = lane.exited = lane.closing = lane.broken = lane.detached = false;
  lane.exit_reason.clear();
  lane.spawned_at = Clock::now();
  lane.controls.clear();
  lane.conversation.clear();
  return true;
}

void ElasticDesk::control(Lane& lane, const std::string& line, Clock::time_point now) {
  if (!lane.process || lane.exited) return;
  if (!lane.process->send(line)) {
    lane.broken = true;
    return;
  }
  lane.controls.push_back({line, now + options_.control_timeout});
}

void ElasticDesk::bury(Lane& lane) {
  if (lane.reply) {
    lane.reply->lane_died(lane.exit_reason.empty() ? "it was stopped" : lane.exit_reason);
    lane.reply.reset();
  }
  if (lane.process) graveyard_.push_back(std::move(lane.process));
  ++lane.generation;  // its reader's last events are ignored
  lane.ready = lane.exited = lane.closing = lane.broken = lane.detached = false;
  lane.controls.clear();
  lane.conversation.clear();
}

bool ElasticDesk::drop_if_done(const std::shared_ptr<Job>& job, Clock::time_point now) {
  JobOutcome out;
  out.prompt_tokens = job->prompt.size();
  if (job->cancelled || job->peer.gone()) {  // the client left while the job waited: nobody to answer
    out.result.stop = StopCause::Cancelled;
  } else if (now >= job->deadline) {
    out.error = ApiError{503, "the request waited longer than serve.request_timeout_s for an engine lane",
                         "server_error", {}, "timeout"};
  } else {
    return false;
  }
  job->channel.finish(std::move(out));
  return true;
}

void ElasticDesk::fail_waiting(const ApiError& error) {
  for (const Waiting& w : waiting_) {
    JobOutcome out;
    out.prompt_tokens = w.job->prompt.size();
    out.error = error;
    w.job->channel.finish(std::move(out));
  }
  waiting_.clear();
}

}  // namespace strata::serve
