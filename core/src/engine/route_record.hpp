// experts.record: an engine's routing counts of the whole run, written as a profile when the engine ends (and on
// SIGINT or SIGTERM, where those still have their default action: the signal then ends the process as it would
// have, after the file is written). The file goes through a temporary and a rename (ExpertProfile::save).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "strata/experts/expert_profile.hpp"

namespace strata {

class Engine;

class RouteRecorder {
 public:
  // Throws strata::Error when `path`'s folder does not exist, or when the engine does not see its routes.
  RouteRecorder(Engine& engine, std::string path);
  ~RouteRecorder();
  RouteRecorder(const RouteRecorder&) = delete;
  RouteRecorder& operator=(const RouteRecorder&) = delete;

  // Held by the engine while a window runs and while its counts are reset, so that a signal's write reads whole
  // windows' counts.
  std::mutex& counts_lock() { return lock_; }
  // Before the engine's counts are reset: keeps what they hold (the caller holds counts_lock).
  void fold();
  // The engine ends: stops the signal watcher and writes the file (a failure is a warning).
  void finish();

 private:
  void write();  // the folded counts and the engine's current ones
  void watch();  // the signal watcher's loop

  Engine& engine_;
  std::string path_;
  std::optional<experts::ExpertProfile> folded_;
  std::mutex lock_;
  std::thread watcher_;
  bool handlers_ = false;  // this recorder installed the SIGINT/SIGTERM handlers
  bool finished_ = false;
};

}  // namespace strata
