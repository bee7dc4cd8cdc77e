#include <cmath>
#include <vector>

#include "policy_keys.hpp"
#include "strata/experts/eviction_policy.hpp"

namespace strata::experts {

namespace {

// Decay without touching every key each window: values are stored in the units of an epoch, a use at a later
// window is added scaled up by growth^(windows since the epoch), and heat divides by that same scale. Once the
// scale grows large, every value is brought back to the current window and the epoch restarts.
class LfuPolicy final : public EvictionPolicy {
 public:
  LfuPolicy(KeySpace keys, double half_life_windows)
      : keys_(keys),
        decay_(std::exp2(-1.0 / half_life_windows)),
        growth_(std::exp2(1.0 / half_life_windows)),
        value_(keys.size(), 0.0) {}

  std::string_view name() const override { return "lfu"; }

  void next_window() override {
    scale_ *= growth_;
    if (scale_ > kRenormalizeAt) {
      for (double& v : value_) v /= scale_;
      scale_ = 1.0;
    }
  }
  void use(ExpertKey key, uint32_t tokens) override {
    value_[policy_index(keys_, key, "lfu")] += static_cast<double>(tokens) * scale_;
  }
  // The steady state of `rate` tokens a window: rate x (1 + decay + decay^2 + ...).
  void seed(ExpertKey key, double tokens_per_position) override {
    value_[policy_index(keys_, key, "lfu")] = tokens_per_position / (1.0 - decay_) * scale_;
  }
  double heat(ExpertKey key) const override { return value_[policy_index(keys_, key, "lfu")] / scale_; }

 private:
  static constexpr double kRenormalizeAt = 1e100;
  KeySpace keys_;
  double decay_, growth_;
  double scale_ = 1.0;
  std::vector<double> value_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lfu_policy(KeySpace keys, double half_life_windows) {
  if (!(half_life_windows > 0.0) || !std::isfinite(half_life_windows))
    throw Error("lfu policy: a half-life of " + std::to_string(half_life_windows) +
                " windows; it must be a positive number");
  return std::make_unique<LfuPolicy>(keys, half_life_windows);
}

}  // namespace strata::experts
