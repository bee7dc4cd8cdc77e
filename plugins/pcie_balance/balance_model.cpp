#include "balance_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace strata::balance {
namespace {

// A sample this many times its prediction (plus a margin for small costs) is a stall: a preempted thread, a page
// fault, not the cost of the layer's experts.
constexpr double kStallFactor = 20.0;
constexpr double kStallMarginUs = 1000.0;

}  // namespace

BalanceModel::BalanceModel(BalanceSettings settings)
    : settings_(settings), pool_(3, settings.memory), gpu_(2, settings.memory) {}

bool BalanceModel::warm() const {
  return pool_.samples() >= settings_.warm_samples && gpu_.samples() >= settings_.warm_samples;
}

bool BalanceModel::plausible(double us, double predicted, bool fit_warm) const {
  if (!std::isfinite(us) || us < 0 || us > settings_.stall_us) return false;
  return !fit_warm || us <= kStallFactor * std::max(predicted, 0.0) + kStallMarginUs;
}

bool BalanceModel::observe(const LayerSample& s) {
  const double n_cpu = s.n_cpu, n_pcie = s.n_pcie;
  const bool pool_ok = s.n_cpu == 0 || plausible(s.pool_us, pool_cost(s.n_cpu, s.n_pcie),
                                                 pool_.samples() >= settings_.warm_samples);
  const bool gpu_ok = plausible(s.gpu_us, gpu_cost(s.n_pcie), gpu_.samples() >= settings_.warm_samples);
  if (!pool_ok || !gpu_ok) {
    ++rejected_;
    return false;
  }
  // A layer without CPU experts has no pool call: it says nothing about the pool's line.
  if (s.n_cpu > 0) pool_.add({1.0, n_cpu, n_pcie}, s.pool_us);
  gpu_.add({1.0, n_pcie, 0.0}, s.gpu_us);
  return true;
}

double BalanceModel::pool_cost(uint32_t n_cpu, uint32_t n_pcie) const {
  if (n_cpu == 0) return 0.0;
  return std::max(0.0, pool_.predict({1.0, static_cast<double>(n_cpu), static_cast<double>(n_pcie)}));
}

double BalanceModel::gpu_cost(uint32_t n_pcie) const {
  return std::max(0.0, gpu_.predict({1.0, static_cast<double>(n_pcie), 0.0}));
}

uint32_t BalanceModel::best(uint32_t n_miss) const {
  uint32_t best_m = 0;
  double best_cost = 0;
  for (uint32_t m = 0; m <= n_miss; ++m) {
    const double cost = std::max(gpu_cost(m), pool_cost(n_miss - m, m));
    if (m == 0 || cost < best_cost) {
      best_cost = cost;
      best_m = m;
    }
  }
  return best_m;
}

uint32_t BalanceModel::choose(uint32_t n_miss) {
  if (!warm()) return kNoOpinion;
  uint32_t m = best(n_miss);
  if (n_miss > 0 && (m == 0 || m == n_miss) && settings_.explore_every > 0 &&
      ++one_sided_ % settings_.explore_every == 0) {
    m = m == 0 ? 1 : m - 1;  // the other side gets one, so its fit keeps seeing samples
    ++explored_;
  }
  ++choices_;
  chosen_ += m;
  misses_ += n_miss;
  return m;
}

std::string BalanceModel::describe() const {
  const auto& p = pool_.coefficients();
  const auto& g = gpu_.coefficients();
  char line[512];
  std::snprintf(line, sizeof line,
                "pcie_balance: the pool %.1f + %.1f x n_cpu + %.1f x n_pcie us, the GPU %.1f + %.1f x n_pcie us "
                "(%zu and %zu samples, %llu rejected); %s",
                p[0], p[1], p[2], g[0], g[1], pool_.samples(), gpu_.samples(), static_cast<unsigned long long>(rejected_),
                choices_ == 0 ? "no layer chosen yet (the fits warm up on the probe's share)" : "");
  std::string out = line;
  if (choices_ > 0) {
    std::snprintf(line, sizeof line, "m %.2f of %.2f misses a layer on average, %llu layers explored",
                  static_cast<double>(chosen_) / static_cast<double>(choices_),
                  static_cast<double>(misses_) / static_cast<double>(choices_), static_cast<unsigned long long>(explored_));
    out += line;
  }
  return out;
}

}  // namespace strata::balance
