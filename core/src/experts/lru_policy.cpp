#include <vector>

#include "policy_keys.hpp"
#include "strata/experts/eviction_policy.hpp"

namespace strata::experts {

namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  explicit LruPolicy(KeySpace keys) : keys_(keys), last_use_(keys.size(), 0) {}

  std::string_view name() const override { return "lru"; }
  void next_window() override { ++clock_; }
  void use(ExpertKey key, uint32_t) override { last_use_[policy_index(keys_, key, "lru")] = clock_; }
  // Recency says nothing about a profile's rates: the profile's ranking already chose the first residents.
  void seed(ExpertKey key, double) override { policy_index(keys_, key, "lru"); }
  double heat(ExpertKey key) const override { return static_cast<double>(last_use_[policy_index(keys_, key, "lru")]); }

 private:
  KeySpace keys_;
  uint64_t clock_ = 1;  // 0 is "never used"
  std::vector<uint64_t> last_use_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> make_lru_policy(KeySpace keys) { return std::make_unique<LruPolicy>(keys); }

}  // namespace strata::experts
