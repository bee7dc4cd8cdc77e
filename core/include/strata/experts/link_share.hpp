// The default share of misses read over PCIe (experts.pcie_frac: auto), set once at start from what the link
// probe measures: pinned host-to-device bandwidth and a copy's fixed cost, against the host's read bandwidth.
//
// A layer's misses are split so that the copies and the pool finish together. At one token per expert (decode)
// an expert costs the pool bytes / cpu_rate and the link overhead + bytes / h2d; m of M misses balance when
// m x t_pcie = (M - m) x t_cpu, so
//     share = t_cpu / (t_pcie + t_cpu).
// cpu_rate is what the caller measured the pool at: the host's read rate, or the pool's own timing on the model's
// experts where that is slower (HybridMoe::measure_pool). The balancer (pcie_balance) replaces the share with
// fitted per-layer costs when it is on. When the pool and the link both saturate the same RAM, no split beats
// RAM's bandwidth, and the balanced share is still among the best.
#pragma once

#include <cstdint>

namespace strata::experts {

// Throws strata::Error for a NaN, infinite or negative measure, or expert_bytes 0. A link of 0 bytes/s gives 0;
// a pool of 0 bytes/s (with a working link) gives 1.
double default_pcie_frac(double h2d_bytes_per_s, double cpu_bytes_per_s, uint64_t expert_bytes,
                         double copy_overhead_s = 0.0);

}  // namespace strata::experts
