// The bounds check the policies share: a key outside the key space is a caller's mistake, named in the error.
#pragma once

#include <string>

#include "strata/error.hpp"
#include "strata/experts/expert_key.hpp"

namespace strata::experts {

inline size_t policy_index(const KeySpace& keys, ExpertKey key, const char* policy) {
  if (key.layer >= keys.n_layer || key.expert >= keys.n_expert)
    throw Error(std::string(policy) + " policy: layer " + std::to_string(key.layer) + " expert " +
                std::to_string(key.expert) + " is outside its " + std::to_string(keys.n_layer) + " layers x " +
                std::to_string(keys.n_expert) + " experts");
  return keys.index(key);
}

}  // namespace strata::experts
