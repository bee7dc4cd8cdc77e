// The CPU pool's own roofline for the decode summary: the expert weights the pool read a token, its time a token
// inside its calls, and the read rate those make, against the host's read rate the link probe measured. The pool
// streams each expert it computes from RAM once a call, so that rate says how close it runs to the memory's.
#pragma once

#include <cstdint>
#include <string>

namespace strata::experts {

struct PoolTraffic {
  uint64_t calls = 0;   // the pool's compute calls
  uint64_t bytes = 0;   // the expert weights they read: each computed expert's matrices once a call
  double seconds = 0;   // wall time inside the calls
  uint64_t tokens = 0;  // token positions of the windows the pool serves (decode windows)

  void add_call(uint64_t weight_bytes, double call_seconds) {
    ++calls;
    bytes += weight_bytes;
    seconds += call_seconds;
  }
  double bytes_per_token() const { return tokens > 0 ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0; }
  double seconds_per_token() const { return tokens > 0 ? seconds / static_cast<double>(tokens) : 0.0; }
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0; }
};

// "CPU pool: 412 MB/token read in 9.80 ms/token = 42.0 GB/s, 71% of the host read rate 59.1 GB/s", in
// decimal units (MB over ms is GB/s), about three digits each. Without a host read rate (0: the link probe measures it
// only with experts.pcie_frac auto) the share is left out and the line says why. Empty when the pool ran no call.
std::string render_pool_roofline(const PoolTraffic& traffic, double host_read_bytes_per_s);

}  // namespace strata::experts
