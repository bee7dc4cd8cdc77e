// Seconds on the steady clock since a time point, and rates over such seconds: the host's timings (steps, probes,
// start-up lines, tokens a second).
#pragma once

#include <chrono>
#include <cstddef>

namespace strata {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// n items over `seconds`; 0 when no time was measured (a step too short for the clock, or none run).
inline double per_second(size_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

}  // namespace strata
