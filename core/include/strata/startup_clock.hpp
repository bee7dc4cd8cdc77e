// The first minute: how long a process took from its start to a ready engine and to its first token, by phase
// (the backend's start, mapping the file, the weights to the device, the experts' host copy, the cache fill, the
// link probe). The engine's steps add their phases as they run; `strata run` and `strata bench` print one line.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::startup {

// Seconds since the process started (the kernel's start time, to 10 ms; where /proc is missing, since this
// library was loaded).
double since_start();

// Adds `seconds` to a phase (phases keep the order in which they first appear).
void add(std::string_view phase, double seconds);

// Times its own scope into a phase.
class Phase {
 public:
  explicit Phase(std::string_view name) : name_(name), t0_(std::chrono::steady_clock::now()) {}
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  std::string_view name_;
  std::chrono::steady_clock::time_point t0_;
};

// The engine is ready (Engine::from_launch returns) and its first logits came back; the first call of each counts.
void mark_ready();
void mark_first_token();

struct Report {
  double ready = -1;        // seconds since the process started; -1: not yet
  double first_token = -1;  // the same; -1: not yet
  std::vector<std::pair<std::string, double>> phases;  // seconds each, in order
};
Report report();

// One line: "startup: ready in 1.92 s (backend 0.31, map 0.01, weights 0.80, ..., other 0.12); first token at
// 2.05 s (+0.13)".
std::string line(const Report& r);

}  // namespace strata::startup
