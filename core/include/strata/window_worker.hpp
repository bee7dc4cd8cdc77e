// A thread that runs one job per window of the hybrid path's fast mode (the placer, the copy watcher): start()
// hands it the next window, finished()/wait_for() say when the job is done, and error() what it threw. The
// thread lives as long as the object; it sleeps between windows.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace strata {

class WindowWorker {
 public:
  explicit WindowWorker(std::function<void()> job) : job_(std::move(job)), thread_([this] { serve(); }) {}
  ~WindowWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  WindowWorker(const WindowWorker&) = delete;
  WindowWorker& operator=(const WindowWorker&) = delete;

  void start() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = nullptr;
      ++started_;
    }
    wake_.notify_all();
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_ == started_;
  }
  // Waits up to `limit` for the job started last; true when it is done.
  bool wait_for(std::chrono::microseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return idle_.wait_for(lock, limit, [&] { return finished_ == started_; });
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return finished_ == started_; });
  }
  // What the job started last threw (once it finished), or null.
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || started_ > finished_; });
      if (stop_) return;
      const uint64_t window = started_;
      lock.unlock();
      std::exception_ptr failed;
      try {
        job_();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      error_ = failed;
      finished_ = window;
      idle_.notify_all();
    }
  }

  std::function<void()> job_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  uint64_t started_ = 0, finished_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace strata
