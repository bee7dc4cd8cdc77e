#include "route_record.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/route_profile.hpp"

namespace strata {

namespace {

// The self-pipe between the signal handler and the watcher thread (one recorder at a time owns the handlers).
int g_pipe[2] = {-1, -1};
std::atomic<bool> g_owned{false};
constexpr int kSignals[] = {SIGINT, SIGTERM};

extern "C" void on_stop_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &b, 1);
  errno = saved;
}

bool default_action(int sig) {
  struct sigaction now {};
  return ::sigaction(sig, nullptr, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
}

experts::ProfileInfo record_info(Engine& engine) {
  experts::ProfileInfo info = model_profile_info(engine.model());
  info.prompts = "a run";
  info.backend = engine.backend().describe();
  info.recorded_by = "experts.record";
  return info;
}

}  // namespace

RouteRecorder::RouteRecorder(Engine& engine, std::string path) : engine_(engine), path_(std::move(path)) {
  const std::filesystem::path folder = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec))
    throw Error("experts.record: the folder " + folder.string() + " does not exist: create it or record elsewhere");
  engine_profile(engine_, {});  // throws when the engine does not see its routes
  if (!g_owned.exchange(true)) {
    if (default_action(SIGINT) && default_action(SIGTERM) && ::pipe(g_pipe) == 0) {
      handlers_ = true;
      struct sigaction act {};
      act.sa_handler = on_stop_signal;
      sigemptyset(&act.sa_mask);
      for (int sig : kSignals) ::sigaction(sig, &act, nullptr);
      watcher_ = std::thread([this] { watch(); });
    } else {
      g_owned = false;
    }
  }
  log::info("experts.record: the run's routing counts go to " + path_ + " when it ends" +
            (handlers_ ? " (or on SIGINT/SIGTERM)" : ""));
}

RouteRecorder::~RouteRecorder() {
  if (!handlers_) return;
  struct sigaction act {};
  act.sa_handler = SIG_DFL;
  sigemptyset(&act.sa_mask);
  for (int sig : kSignals) ::sigaction(sig, &act, nullptr);
  if (watcher_.joinable()) {
    const unsigned char quit = 0;
    [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &quit, 1);
    watcher_.join();
  }
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
  g_owned = false;
}

void RouteRecorder::watch() {
  for (;;) {
    unsigned char b = 0;
    const ssize_t n = ::read(g_pipe[0], &b, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || b == 0) return;
    {
      std::lock_guard<std::mutex> hold(lock_);  // the window running now finishes first
      if (!finished_) {
        finished_ = true;
        write();
      }
    }
    // The signal's own action now: the process ends as it would have without the recorder.
    struct sigaction act {};
    act.sa_handler = SIG_DFL;
    sigemptyset(&act.sa_mask);
    ::sigaction(b, &act, nullptr);
    ::kill(::getpid(), b);
    return;
  }
}

void RouteRecorder::fold() {
  experts::ExpertProfile now = engine_profile(engine_, record_info(engine_));
  if (folded_) {
    folded_->merge(now);
  } else {
    folded_ = std::move(now);
  }
}

void RouteRecorder::write() {
  try {
    experts::ExpertProfile total = engine_profile(engine_, record_info(engine_));
    if (folded_) total.merge(*folded_);
    total.save(path_);
    log::info("experts.record: wrote " + path_ + " (" + std::to_string(total.positions()) + " tokens counted)");
  } catch (const Error& e) {
    log::warn(std::string("experts.record: nothing written: ") + e.what());
  }
}

void RouteRecorder::finish() {
  if (handlers_ && watcher_.joinable()) {
    const unsigned char quit = 0;
    [[maybe_unused]] const ssize_t n = ::write(g_pipe[1], &quit, 1);
    watcher_.join();
  }
  std::lock_guard<std::mutex> hold(lock_);
  if (finished_) return;
  finished_ = true;
  write();
}

}  // namespace strata
