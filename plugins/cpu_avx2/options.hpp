// The plugin's options (its YAML section, flattened to "key=value" by the host).
#pragma once

#include <cstddef>
#include <string>

namespace strata::cpu {

struct Options {
  unsigned workers = 0;     // pool threads besides the caller; default: all cores but one
  bool host_worker = true;  // the calling thread takes a share of every op
  bool force_avx2 = false;  // ignore AVX-512 even where the CPU has it
  unsigned spin_us = 300;   // how long idle workers spin for the next op before they sleep
};

// Parses the options; on a bad key or value returns false with a message naming it in *error.
// `cores` is the number of CPUs this process may run on (for the default worker count).
bool parse_options(const char* const* options, size_t n, unsigned cores, Options* out, std::string* error);

}  // namespace strata::cpu
