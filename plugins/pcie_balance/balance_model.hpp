// The balancer's model: two cost lines fitted online (RlsFit), the pool's `a + c*n_cpu + d*n_pcie` (d: PCIe copies
// read the same RAM as the pool, so they slow it) and the GPU's `g0 + g*n_pcie` (from the routes to the layer's
// PCIe experts in place), and the choice of how many of a layer's misses go over PCIe: the m that minimizes
// max(GPU(m), pool(n - m, m)). Every explore_every-th choice that would keep all misses on one side moves one to the
// other, so that neither fit goes stale. A sample that cannot be a cost (negative, not finite, a stall) is rejected.
#pragma once

#include <cstdint>
#include <string>

#include "rls_fit.hpp"

namespace strata::balance {

struct BalanceSettings {
  double memory = 200;           // layers of memory of the fits
  uint32_t explore_every = 64;   // one-sided choices between two explorations (0: never)
  uint32_t warm_samples = 16;    // samples each fit needs before the model chooses
  double stall_us = 100000;      // a layer's time above this is a stall, not a cost
};

struct LayerSample {
  uint32_t n_cpu = 0, n_pcie = 0;
  double pool_us = 0;  // the pool's time for the layer (0 with n_cpu 0)
  double gpu_us = 0;   // from the layer's routes to its PCIe experts in place on the device
};

class BalanceModel {
 public:
  static constexpr uint32_t kNoOpinion = UINT32_MAX;

  explicit BalanceModel(BalanceSettings settings = {});

  // Fits the sample, or rejects it (false) when it cannot be a cost.
  bool observe(const LayerSample& s);
  // How many of n_miss misses to read over PCIe; kNoOpinion until both fits are warm. Counts the choice.
  uint32_t choose(uint32_t n_miss);
  // The minimum of max(GPU(m), pool(n - m, m)) over m, fewest over PCIe on ties; no exploration, not counted.
  uint32_t best(uint32_t n_miss) const;
  double pool_cost(uint32_t n_cpu, uint32_t n_pcie) const;  // 0 when the pool has nothing
  double gpu_cost(uint32_t n_pcie) const;
  bool warm() const;

  const RlsFit& pool_fit() const { return pool_; }
  const RlsFit& gpu_fit() const { return gpu_; }
  uint64_t rejected() const { return rejected_; }
  uint64_t explored() const { return explored_; }
  // The fitted costs in us, the samples, and the mean choice: one line for the decode summary.
  std::string describe() const;

 private:
  bool plausible(double us, double predicted, bool fit_warm) const;

  BalanceSettings settings_;
  RlsFit pool_, gpu_;
  uint64_t rejected_ = 0, explored_ = 0, one_sided_ = 0;
  uint64_t choices_ = 0, chosen_ = 0, misses_ = 0;
};

}  // namespace strata::balance
