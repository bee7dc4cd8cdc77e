// This process's resident memory, from /proc/self/status (Linux): what `strata run` and `strata bench` report
// and what the resident-memory test checks (weights stay memory-mapped, so a model costs its file's pages).
#pragma once

#include <cstdint>
#include <string>

namespace strata {

// VmRSS and VmHWM (the peak) in bytes; 0 when /proc cannot be read.
uint64_t resident_bytes();
uint64_t peak_resident_bytes();

// "12.3 MiB"
std::string format_mib(uint64_t bytes);

}  // namespace strata
