// What the hybrid path's files share: the host clock (seconds_since from strata/steady_seconds.hpp), and reading
// a buffer the device may hold.
#pragma once

#include <chrono>
#include <cstring>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/steady_seconds.hpp"

namespace strata {

using clock_type = std::chrono::steady_clock;

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
