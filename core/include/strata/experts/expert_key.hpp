// Naming one routed expert: (layer, expert), and the dense index space the cache and its policies use.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>

namespace strata::experts {

// Ordered by layer, then expert: every tie-break in the cache and the planner uses this order, so plans and
// fills are reproducible.
struct ExpertKey {
  uint32_t layer = 0;
  uint32_t expert = 0;
  auto operator<=>(const ExpertKey&) const = default;
};

// One distinct expert of a layer's window and how many of the window's tokens were routed to it.
struct ExpertUse {
  uint32_t expert = 0;
  uint32_t tokens = 0;
};

// n_layer x n_expert keys, indexed densely (layer-major). n_expert is the widest layer's count.
struct KeySpace {
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;
  size_t size() const { return size_t{n_layer} * n_expert; }
  size_t index(ExpertKey k) const { return size_t{k.layer} * n_expert + k.expert; }
  ExpertKey key(size_t index) const {
    return {static_cast<uint32_t>(index / n_expert), static_cast<uint32_t>(index % n_expert)};
  }
  bool operator==(const KeySpace&) const = default;
};

}  // namespace strata::experts
