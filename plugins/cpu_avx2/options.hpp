// The plugin's options (its YAML section, flattened to "key=value" by the host).
#pragma once

#include <cstddef>
#include <string>

#include "cpu_topology.hpp"

namespace strata::cpu {

struct Options {
  unsigned workers = 0;     // pool threads besides the caller (workers=auto, the default: see parse_options)
  unsigned reserve = 0;     // cores that workers=auto leaves to the engine's own threads (the host's fast mode)
  bool host_worker = true;  // the calling thread claims pieces of every op too
  bool force_avx2 = false;  // ignore AVX-512 even where the CPU has it
  int gathers = -1;         // AVX-512 kernels may gather: 1 yes, 0 no, -1 auto (gathers_fast)
  unsigned spin_us = 300;   // how long idle workers spin for the next op before they sleep
  bool pin = false;         // pin each worker to a CPU of its own
  std::string why;          // the set-up line: how many workers, and why that many
};

// Parses the options; on a bad key or value returns false with a message naming it in *error. workers=auto: one
// per physical core of `cpus` (SMT siblings share one), less one for the calling thread when it works, less
// `reserve`; at least one thread computes.
bool parse_options(const char* const* options, size_t n, const CpuTopology& cpus, Options* out, std::string* error);

}  // namespace strata::cpu
