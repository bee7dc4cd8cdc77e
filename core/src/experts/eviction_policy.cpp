#include "strata/experts/eviction_policy.hpp"

namespace strata::experts {

std::unique_ptr<EvictionPolicy> make_eviction_policy(config::CachePolicy policy, KeySpace keys) {
  switch (policy) {
    case config::CachePolicy::Lru: return make_lru_policy(keys);
    case config::CachePolicy::Lfu: return make_lfu_policy(keys);
  }
  return make_lfu_policy(keys);
}

}  // namespace strata::experts
