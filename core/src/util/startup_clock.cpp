#include "strata/startup_clock.hpp"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>

namespace strata::startup {

namespace {

using clock_type = std::chrono::steady_clock;

// The process's start as a steady_clock time: /proc/self/stat's start time (clock ticks after boot) against
// CLOCK_BOOTTIME now.
clock_type::time_point process_start() {
  const clock_type::time_point now = clock_type::now();
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  timespec boot{};
  const long ticks = ::sysconf(_SC_CLK_TCK);
  if (paren == std::string::npos || ticks <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return now;
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  const double up = static_cast<double>(boot.tv_sec) + static_cast<double>(boot.tv_nsec) * 1e-9;
  const double age = up - static_cast<double>(start_ticks) / static_cast<double>(ticks);
  if (start_ticks == 0 || age < 0 || age > 3600) return now;  // not a believable start: count from here
  return now - std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(age));
}

struct State {
  std::mutex lock;
  clock_type::time_point start = process_start();
  Report report;
};

State& state() {
  static State s;
  return s;
}

// The start is read when the library loads, not at the first phase.
[[maybe_unused]] const bool g_started = (state(), true);

double seconds_since_start(State& s) {
  return std::chrono::duration<double>(clock_type::now() - s.start).count();
}

}  // namespace

double since_start() { return seconds_since_start(state()); }

void add(std::string_view phase, double seconds) {
  State& s = state();
  std::lock_guard<std::mutex> hold(s.lock);
  for (auto& [name, total] : s.report.phases) {
    if (name == phase) {
      total += seconds;
      return;
    }
  }
  s.report.phases.emplace_back(std::string(phase), seconds);
}

Phase::~Phase() { add(name_, std::chrono::duration<double>(clock_type::now() - t0_).count()); }

void mark_ready() {
  State& s = state();
  std::lock_guard<std::mutex> hold(s.lock);
  if (s.report.ready < 0) s.report.ready = seconds_since_start(s);
}

void mark_first_token() {
  static std::atomic<bool> marked{false};  // every window calls this: one lock in all
  if (marked.exchange(true, std::memory_order_relaxed)) return;
  State& s = state();
  std::lock_guard<std::mutex> hold(s.lock);
  if (s.report.first_token < 0) s.report.first_token = seconds_since_start(s);
}

Report report() {
  State& s = state();
  std::lock_guard<std::mutex> hold(s.lock);
  return s.report;
}

std::string line(const Report& r) {
  char buf[64];
  std::string out = "startup: ";
  if (r.ready < 0) return out + "the engine is not ready";
  std::snprintf(buf, sizeof buf, "ready in %.2f s (", r.ready);
  out += buf;
  double named = 0;
  for (const auto& [name, seconds] : r.phases) {
    std::snprintf(buf, sizeof buf, "%.2f, ", seconds);
    out += name + " " + buf;
    named += seconds;
  }
  std::snprintf(buf, sizeof buf, "other %.2f)", r.ready > named ? r.ready - named : 0.0);
  out += buf;
  if (r.first_token >= 0) {
    std::snprintf(buf, sizeof buf, "; first token at %.2f s (+%.2f)", r.first_token, r.first_token - r.ready);
    out += buf;
  }
  return out;
}

}  // namespace strata::startup
