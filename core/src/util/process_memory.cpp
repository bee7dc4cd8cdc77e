#include "strata/process_memory.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace strata {
namespace {

// A "Name:   1234 kB" line of /proc/self/status, in bytes.
uint64_t status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':') {
      return std::stoull(line.substr(len + 1)) * 1024;
    }
  }
  return 0;
}

}  // namespace

uint64_t resident_bytes() { return status_kib("VmRSS"); }
uint64_t peak_resident_bytes() { return status_kib("VmHWM"); }

std::string format_mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace strata
