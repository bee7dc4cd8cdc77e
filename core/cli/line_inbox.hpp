// `strata engine`'s input: stdin read line by line on a thread of its own (also used by tests/fake_engine, the
// desk's stand-in engine, so that both take control lines the same way).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

namespace strata::cli {

// stdin's lines, read on a thread of their own, so that control lines that come while a request runs are seen
// between its windows. `seen` (optional) is called with each line as it is read (the desk's fake engine logs them).
class LineInbox {
 public:
  explicit LineInbox(std::function<void(const std::string&)> seen = {}) : seen_(std::move(seen)), reader_([this] { read(); }) {}
  ~LineInbox() { reader_.detach(); }  // a reader blocked in getline cannot be woken; the process is ending
  LineInbox(const LineInbox&) = delete;
  LineInbox& operator=(const LineInbox&) = delete;

  // The next line; false at the end of input.
  bool next(std::string& line) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !lines_.empty() || ended_; });
    if (lines_.empty()) return false;
    line = std::move(lines_.front());
    lines_.pop_front();
    return true;
  }
  // Takes the control lines waiting now (requests stay, in order).
  template <class Fn>
  void take_controls(Fn&& handle) {
    std::deque<std::string> controls;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = lines_.begin(); it != lines_.end();) {
        if (is_request(*it)) {
          ++it;
        } else {
          controls.push_back(std::move(*it));
          it = lines_.erase(it);
        }
      }
    }
    for (const std::string& c : controls) handle(c);
  }
  static bool is_request(const std::string& line) {
    const size_t at = line.find_first_not_of(" \t\r");
    return at != std::string::npos && line[at] == '{';
  }

 private:
  void read() {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (seen_) seen_(line);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        lines_.push_back(std::move(line));
      }
      ready_.notify_one();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_ = true;
    }
    ready_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> lines_;
  bool ended_ = false;
  std::function<void(const std::string&)> seen_;
  std::thread reader_;  // last: it starts at construction
};

}  // namespace strata::cli
