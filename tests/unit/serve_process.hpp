// `strata serve` as a child process for the HTTP tests: its stderr read until it listens (or ends), SIGKILL on
// destruction unless stopped.
#pragma once

#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::test {

inline std::string stories_model() { return std::string(STRATA_SOURCE_DIR) + "/models/stories260K.gguf"; }

// `must_start`: a server that does not listen within 60 s throws, with its stderr.
class ServeProcess {
 public:
  explicit ServeProcess(const std::vector<std::string>& extra, bool must_start = true) {
    std::vector<std::string> args = {STRATA_EXE, "serve", "--model", stories_model(), "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    int err[2];
    if (pipe(err) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(err[1], STDERR_FILENO);
      close(err[0]);
      close(err[1]);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(err[1]);
    fd_ = err[0];
    const std::string listening = "strata serve: listening on http://127.0.0.1:";
    std::string line;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < give_up) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char c;
      if (read(fd_, &c, 1) != 1) break;  // it ended: stop() says how
      if (c != '\n') {
        line += c;
        continue;
      }
      stderr_ += line + "\n";
      if (const size_t at = line.find(listening); at != std::string::npos) {
        port_ = std::stoi(line.substr(at + listening.size()));
        return;
      }
      line.clear();
    }
    if (must_start) throw std::runtime_error("strata serve did not start; its stderr:\n" + stderr_ + line);
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(fd_);
  }
  // Signals it (unless it has ended) and waits: its exit status.
  int stop(int sig = SIGTERM) {
    if (sig != 0) kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    char buf[4096];
    for (ssize_t n; (n = read(fd_, buf, sizeof buf)) > 0;) stderr_.append(buf, static_cast<size_t>(n));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int port() const { return port_; }
  const std::string& stderr_text() const { return stderr_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int port_ = 0;
  std::string stderr_;
};

}  // namespace strata::test
