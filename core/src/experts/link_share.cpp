#include "strata/experts/link_share.hpp"

#include <cmath>
#include <string>

#include "strata/error.hpp"

namespace strata::experts {

namespace {

void check_measure(double value, const char* what) {
  if (!std::isfinite(value) || value < 0.0)
    throw Error(std::string("link probe: ") + what + " is " + std::to_string(value) +
                ": a measure must be a finite number >= 0; set experts.pcie_frac by hand or re-run the probe");
}

}  // namespace

double default_pcie_frac(double h2d_bytes_per_s, double cpu_bytes_per_s, uint64_t expert_bytes,
                         double copy_overhead_s) {
  check_measure(h2d_bytes_per_s, "host-to-device bandwidth");
  check_measure(cpu_bytes_per_s, "the pool's rate");
  check_measure(copy_overhead_s, "copy overhead");
  if (expert_bytes == 0) throw Error("link probe: no routed expert bytes to size the PCIe share by");
  if (h2d_bytes_per_s == 0.0) return 0.0;
  if (cpu_bytes_per_s == 0.0) return 1.0;
  const double bytes = static_cast<double>(expert_bytes);
  const double t_pcie = copy_overhead_s + bytes / h2d_bytes_per_s;
  const double t_cpu = bytes / cpu_bytes_per_s;
  return t_cpu / (t_pcie + t_cpu);
}

}  // namespace strata::experts
