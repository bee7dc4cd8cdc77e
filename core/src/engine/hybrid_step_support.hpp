// What the hybrid path's files share: the host clock's seconds, and reading a buffer the device may hold.
#pragma once

#include <chrono>
#include <cstring>
#include <vector>

#include "strata/device_memory.hpp"

namespace strata {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// n values of a buffer the device may hold, into host memory.
template <class T>
void read_back(DeviceMemory& mem, const Buffer<T>& src, size_t n, std::vector<T>& out) {
  out.resize(n);
  if (src.on_device()) {
    mem.download(out.data(), src.data(), n * sizeof(T));
  } else {
    std::memcpy(out.data(), src.data(), n * sizeof(T));
  }
}

}  // namespace strata
