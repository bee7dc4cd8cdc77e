// The default share of misses read over PCIe (experts.pcie_frac: auto), set once at start from what the link
// probe measures: pinned host-to-device bandwidth and a copy's fixed cost, against the host's read bandwidth.
//
// A layer's misses are split so that the copies and the pool finish together. At one token per expert (decode)
// the pool is bound by reading the expert's bytes from RAM, so an expert costs the pool bytes / cpu_read and the
// link overhead + bytes / h2d; m of M misses balance when m x t_pcie = (M - m) x t_cpu, so
//     share = t_cpu / (t_pcie + t_cpu).
// "From the link alone" means from these measured bandwidths, not from timing the pool's kernels: how fast the
// pool computes (its threads, its ISA) does not enter; the balancer (pcie_balance) replaces the share with fitted
// per-layer costs when it is on. When the pool and the link both saturate the same RAM, no split beats RAM's
// bandwidth, and the balanced share is still among the best.
#pragma once

#include <cstdint>

namespace strata::experts {

// Throws strata::Error for a NaN, infinite or negative measure, or expert_bytes 0. A link of 0 bytes/s gives 0;
// a host read of 0 bytes/s (with a working link) gives 1.
double default_pcie_frac(double h2d_bytes_per_s, double cpu_read_bytes_per_s, uint64_t expert_bytes,
                         double copy_overhead_s = 0.0);

}  // namespace strata::experts
