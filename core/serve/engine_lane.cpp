#include "strata/serve/engine_lane.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "strata/error.hpp"

extern char** environ;

namespace strata::serve {
namespace {

constexpr size_t kStderrTail = 6;  // stderr lines kept for the exit reason

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A pipe whose ends are close-on-exec and above 2, so that dup2 onto the child's 0, 1 and 2 always makes a new
// descriptor (which drops close-on-exec) and no other child inherits either end.
void make_pipe(int fds[2]) {
  int raw[2];
  if (::pipe2(raw, O_CLOEXEC) != 0) throw Error(std::string("cannot make a pipe for an engine lane: ") + std::strerror(errno));
  for (int i = 0; i < 2; ++i) {
    fds[i] = raw[i];
    if (raw[i] > 2) continue;
    fds[i] = ::fcntl(raw[i], F_DUPFD_CLOEXEC, 3);
    ::close(raw[i]);
  }
  if (fds[0] < 0 || fds[1] < 0) {
    close_fd(fds[0]);
    close_fd(fds[1]);
    throw Error(std::string("cannot make a pipe for an engine lane: ") + std::strerror(errno));
  }
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

LaneOutput classify(std::string line) {
  LaneOutput out;
  if (line.starts_with("CTL ")) {
    out.kind = LaneOutput::Kind::Control;
  } else if (line.starts_with("{")) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "ready") {
      out.kind = LaneOutput::Kind::Ready;
      out.json = std::move(j);
    } else if (j.is_object() && j.contains("id")) {
      out.kind = LaneOutput::Kind::Reply;
      out.json = std::move(j);
    }
  }
  out.line = std::move(line);
  return out;
}

}  // namespace

EngineLane::EngineLane(std::string name, const LaneCommand& command, Listener listener)
    : name_(std::move(name)), listener_(std::move(listener)) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  try {
    make_pipe(in);
    make_pipe(out);
    make_pipe(err);
  } catch (...) {
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) close_fd(*fd);
    throw;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  // The server's sockets are not close-on-exec (httplib): an engine holding a client's connection would keep it
  // open after the server closed it.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // `strata serve` blocks SIGINT and SIGTERM in every thread and ignores SIGPIPE; an engine gets the defaults. Its
  // own process group: a terminal's Ctrl-C reaches the server, which ends its lanes itself.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> args;
  args.push_back(command.executable);
  args.insert(args.end(), command.arguments.begin(), command.arguments.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, command.executable.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(err[1]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    close_fd(in_fd_);
    close_fd(out_fd_);
    close_fd(err_fd_);
    throw Error("cannot start the " + name_ + " engine lane (" + command.executable + "): " + std::strerror(rc));
  }
  reader_ = std::thread([this] { read_loop(); });
}

EngineLane::~EngineLane() {
  close_input();
  kill();
  if (reader_.joinable()) reader_.join();
  close_fd(out_fd_);
  close_fd(err_fd_);
}

bool EngineLane::send(std::string_view line) {
  std::lock_guard lock(in_mutex_);
  if (in_fd_ < 0) return false;
  std::string text(line);
  text += '\n';
  // A lane that died is a failed write, not the end of the server: SIGPIPE is blocked on this thread for the
  // write, and one it raised is taken back before the mask is restored.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  bool ok = true;
  std::string_view rest = text;
  while (!rest.empty()) {
    const ssize_t n = ::write(in_fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  if (!ok && !was_pending) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

void EngineLane::close_input() {
  std::lock_guard lock(in_mutex_);
  close_fd(in_fd_);
}

void EngineLane::kill() {
  std::lock_guard lock(pid_mutex_);
  if (!reaped_ && pid_ > 0) ::kill(pid_, SIGKILL);
}

void EngineLane::read_loop() {
  std::string out_buffer, err_buffer;
  bool out_open = true, err_open = true;
  char chunk[65536];
  const std::string prefix = name_ + ": ";
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int which = 0; which < 2; ++which) {
      if (fds[which].revents == 0) continue;
      const ssize_t n = ::read(fds[which].fd, chunk, sizeof chunk);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      std::string& buffer = which == 0 ? out_buffer : err_buffer;
      if (n <= 0) {
        (which == 0 ? out_open : err_open) = false;
        if (buffer.empty()) continue;
        buffer += '\n';  // a last line without its newline still counts
      } else {
        buffer.append(chunk, static_cast<size_t>(n));
      }
      size_t start = 0;
      for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = buffer.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (which == 0) {
          if (!line.empty()) listener_(classify(std::move(line)));
        } else {
          write_all(STDERR_FILENO, prefix + line + "\n");
          stderr_tail_.push_back(std::move(line));
          if (stderr_tail_.size() > kStderrTail) stderr_tail_.pop_front();
        }
      }
      buffer.erase(0, start);
    }
  }
  LaneOutput exited;
  exited.kind = LaneOutput::Kind::Exited;
  exited.line = reap();
  listener_(std::move(exited));
}

std::string EngineLane::reap() {
  // Both pipes are closed, so the process is ending; one that closed them and lives on is killed after a while.
  int status = 0;
  bool done = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done) {
    {
      std::lock_guard lock(pid_mutex_);
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) {
        done = true;
        reaped_ = true;
        if (r < 0) return "ended (its exit status is lost: " + std::string(std::strerror(errno)) + ")";
        break;
      }
      if (std::chrono::steady_clock::now() > give_up) ::kill(pid_, SIGKILL);
    }
    ::usleep(5000);
  }
  std::string how;
  if (WIFEXITED(status)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    how = "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  } else {
    how = "ended";
  }
  if (!stderr_tail_.empty()) {
    how += "; its stderr ended with: ";
    for (size_t i = 0; i < stderr_tail_.size(); ++i) how += (i ? " | " : "") + stderr_tail_[i];
  }
  return how;
}

}  // namespace strata::serve
