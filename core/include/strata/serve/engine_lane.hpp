// One lane of the elastic desk: a `strata engine` child process (strata/engine_protocol.hpp) with pipes on its
// stdin, stdout and stderr, and a reader thread that sorts what it writes. Lines go in through send(); every line
// that comes out is handed to the listener as it arrives: the ready line, "CTL ..." answers, a request's token,
// done and error lines, and at the end one Exited event once the process has ended and been reaped. The engine's
// stderr is passed on to ours line by line, prefixed with the lane's name, and its last lines are kept for the
// exit reason (a lane that fails to load says why there).
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace strata::serve {

// How a lane's process is started: the executable and the arguments after argv[0].
struct LaneCommand {
  std::string executable;
  std::vector<std::string> arguments;
};

struct LaneOutput {
  enum class Kind {
    Ready,    // {"event": "ready", ...}
    Control,  // "CTL ..." (line)
    Reply,    // a JSON object with an "id": token, done or error
    Other,    // anything else the engine printed on stdout (line)
    Exited,   // the process ended; line says how, with its last stderr lines (always the last event)
  };
  Kind kind = Kind::Other;
  std::string line;
  nlohmann::json json;  // Ready and Reply: the parsed line
};

class EngineLane {
 public:
  // Called on the lane's reader thread, one event at a time, in order.
  using Listener = std::function<void(LaneOutput)>;

  // Starts the process (its own process group, default signal handling, only stdin, stdout and stderr open) and
  // its reader thread. Throws strata::Error when it cannot be started.
  EngineLane(std::string name, const LaneCommand& command, Listener listener);
  // Closes its stdin, kills it when it is still running, and waits for the reader thread (which reports Exited
  // first). Must not be called from the listener, nor while holding a lock the listener takes.
  ~EngineLane();
  EngineLane(const EngineLane&) = delete;
  EngineLane& operator=(const EngineLane&) = delete;

  // Writes `line` and a newline; false when the process no longer reads (its stdin is closed or broken). Never
  // raises SIGPIPE.
  bool send(std::string_view line);
  // End of input: an engine ends after its running request.
  void close_input();
  // SIGKILL, unless it has already been reaped.
  void kill();

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }

 private:
  void read_loop();
  std::string reap();  // waits for the process to end; how it ended

  std::string name_;
  Listener listener_;
  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::mutex in_mutex_;   // one writer at a time, and close_input against send
  std::mutex pid_mutex_;  // kill() against reaping: a reaped pid may already be another process's
  bool reaped_ = false;
  std::deque<std::string> stderr_tail_;  // reader thread only
  std::thread reader_;  // last: started once the rest is set
};

}  // namespace strata::serve
