// Seconds on the steady clock since a time point: the host's timings (steps, probes, start-up lines).
#pragma once

#include <chrono>

namespace strata {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace strata
