// Recursive least squares with exponential forgetting: y ~ theta . x for up to kMaxTerms terms, refitted after
// every sample in O(k^2), old samples weighing lambda^age (lambda = 1 - 1/memory: a memory of about `memory`
// samples). The pcie_balance plugin fits the pool's and the GPU's cost per layer with it.
#pragma once

#include <array>
#include <cstddef>

namespace strata::balance {

class RlsFit {
 public:
  static constexpr size_t kMaxTerms = 3;
  // `terms`: how many of x's entries the model uses (1..kMaxTerms); `memory`: samples of memory (>= 2).
  RlsFit(size_t terms, double memory);

  void add(const std::array<double, kMaxTerms>& x, double y);
  double predict(const std::array<double, kMaxTerms>& x) const;
  const std::array<double, kMaxTerms>& coefficients() const { return theta_; }
  size_t samples() const { return samples_; }

 private:
  size_t k_;
  double lambda_;
  std::array<double, kMaxTerms> theta_{};
  std::array<std::array<double, kMaxTerms>, kMaxTerms> p_{};  // the inverse information matrix, scaled
  size_t samples_ = 0;
};

}  // namespace strata::balance
