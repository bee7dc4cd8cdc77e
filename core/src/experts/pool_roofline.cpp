#include "strata/experts/pool_roofline.hpp"

#include <cmath>
#include <cstdio>

namespace strata::experts {
namespace {

// About three significant digits, never an exponent: "412", "42.0", "9.80", "0.215".
std::string three_digits(double v) {
  const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : v >= 1 ? 2 : 3;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

}  // namespace

std::string render_pool_roofline(const PoolTraffic& traffic, double host_read_bytes_per_s) {
  if (traffic.calls == 0 || traffic.tokens == 0 || traffic.seconds <= 0) return {};
  const double rate = traffic.bytes_per_second();
  std::string line = "CPU pool: " + three_digits(traffic.bytes_per_token() / 1e6) + " MB/token read in " +
                     three_digits(1e3 * traffic.seconds_per_token()) + " ms/token = " + three_digits(rate / 1e9) +
                     " GB/s";
  if (host_read_bytes_per_s > 0) {
    const long percent = std::lround(100.0 * rate / host_read_bytes_per_s);
    return line + ", " + std::to_string(percent) + "% of the host read rate " +
           three_digits(host_read_bytes_per_s / 1e9) + " GB/s";
  }
  return line + " (no host read rate to compare: the link probe measures it with experts.pcie_frac auto)";
}

}  // namespace strata::experts
