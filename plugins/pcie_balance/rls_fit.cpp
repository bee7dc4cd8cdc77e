#include "rls_fit.hpp"

#include <algorithm>

namespace strata::balance {
namespace {

// P starts large (little trust in theta = 0) and may not grow past the cap: a direction that no sample excites
// would otherwise blow up under the forgetting (covariance wind-up) and one sample would then swing theta wildly.
constexpr double kInitialP = 1e4;
constexpr double kMaxTrace = 1e6;

}  // namespace

RlsFit::RlsFit(size_t terms, double memory)
    : k_(std::clamp<size_t>(terms, 1, kMaxTerms)), lambda_(1.0 - 1.0 / std::max(memory, 2.0)) {
  for (size_t i = 0; i < k_; ++i) p_[i][i] = kInitialP;
}

double RlsFit::predict(const std::array<double, kMaxTerms>& x) const {
  double y = 0;
  for (size_t i = 0; i < k_; ++i) y += theta_[i] * x[i];
  return y;
}

void RlsFit::add(const std::array<double, kMaxTerms>& x, double y) {
  std::array<double, kMaxTerms> px{};  // P x
  for (size_t i = 0; i < k_; ++i) {
    for (size_t j = 0; j < k_; ++j) px[i] += p_[i][j] * x[j];
  }
  double denom = lambda_;
  for (size_t i = 0; i < k_; ++i) denom += x[i] * px[i];
  const double err = y - predict(x);
  for (size_t i = 0; i < k_; ++i) theta_[i] += px[i] / denom * err;
  // P = (P - (P x)(P x)^T / denom) / lambda, kept symmetric; no forgetting once P reaches the cap.
  double trace = 0;
  for (size_t i = 0; i < k_; ++i) {
    for (size_t j = 0; j < k_; ++j) p_[i][j] -= px[i] * px[j] / denom;
    trace += p_[i][i];
  }
  if (trace / lambda_ < kMaxTrace) {
    for (size_t i = 0; i < k_; ++i) {
      for (size_t j = 0; j < k_; ++j) p_[i][j] /= lambda_;
    }
  }
  ++samples_;
}

}  // namespace strata::balance
