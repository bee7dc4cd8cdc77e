// Where a window's time goes: the engine, when given an OpProfile, puts a TIMESTAMP op between every two ops where
// the backend runs them (one compute call; times read off the device's clock, a GPU's included) or else runs ops
// one at a time timed on the host, and adds each op's time under a key naming the op and its weight:
// "MUL_MAT q4_K 2048x768". MUL_MAT keys also count the weight bytes read, for GB/s.
// `strata bench --profile` prints it; `strata run --profile-image` prints the image encoder's.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "strata/plugin_api.h"

namespace strata {

class Backend;

class OpProfile {
 public:
  struct Entry {
    uint64_t calls = 0;
    double seconds = 0.0;
    uint64_t weight_bytes = 0;  // weight bytes read by these calls (MUL_MAT, MOE, MOE_ROUTED)
  };
  void add(const strata_op& op, double seconds);
  void add_host(double seconds);
  void clear() { entries_.clear(); }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  // A markdown table sorted by time: key, calls, total ms, ms per `unit` (over `units` of them: tokens, or verify
  // windows), share, GB/s.
  std::string table(uint64_t units, const char* unit = "token") const;

 private:
  std::map<std::string, Entry> entries_;
};

// Runs `ops` on `backend` with each op's time added to `profile`: with a TIMESTAMP op between every two where the
// backend runs them (one compute call, times off the device's clock), else one op at a time timed on the host.
void compute_profiled(Backend& backend, std::span<const strata_op> ops, OpProfile& profile);

}  // namespace strata
