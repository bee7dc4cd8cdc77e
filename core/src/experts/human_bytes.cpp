#include "human_bytes.hpp"

#include <array>
#include <cstdio>

namespace strata::experts {

std::string human_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[48];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string human_bytes(uint64_t bytes) { return human_bytes(static_cast<double>(bytes)); }

}  // namespace strata::experts
