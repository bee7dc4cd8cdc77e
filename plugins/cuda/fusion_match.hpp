// Descriptor tests the fusions make before they run ops together: does one op's output feed the next exactly, and
// may ops whose work is interleaved in one kernel touch these tensors without a hazard. They read descriptors
// only (never device memory); host code.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "strata/format/tensor_checks.hpp"
#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

// The same tensor: data, type, shape and strides.
inline bool same_tensor(const strata_tensor& a, const strata_tensor& b) {
  if (a.data != b.data || a.type != b.type) return false;
  for (int d = 0; d < 4; ++d) {
    if (a.ne[d] != b.ne[d] || a.nb[d] != b.nb[d]) return false;
  }
  return true;
}

// The bytes a tensor's elements span, [lo, hi); empty for a tensor without data or elements.
struct ByteSpan {
  uintptr_t lo = 0, hi = 0;
};

inline ByteSpan byte_span(const strata_tensor& t) {
  if (t.data == nullptr) return {};
  uint64_t last = format::row_bytes(static_cast<format::GgmlType>(t.type), static_cast<uint64_t>(t.ne[0]));
  for (int d = 0; d < 4; ++d) {
    if (t.ne[d] <= 0) return {};
    if (d > 0) last += static_cast<uint64_t>(t.ne[d] - 1) * t.nb[d];
  }
  const auto lo = reinterpret_cast<uintptr_t>(t.data);
  return {lo, lo + static_cast<uintptr_t>(last)};
}

inline bool disjoint(const strata_tensor& a, const strata_tensor& b) {
  const ByteSpan x = byte_span(a), y = byte_span(b);
  return x.lo == x.hi || y.lo == y.hi || x.hi <= y.lo || y.hi <= x.lo;
}

// Row-parallel kernels may read and write tensors that are the same (element i of row r at one address) or that
// do not meet at all; anything in between is a hazard.
inline bool same_or_disjoint(const strata_tensor& a, const strata_tensor& b) { return same_tensor(a, b) || disjoint(a, b); }

inline bool all_same_or_disjoint(std::initializer_list<const strata_tensor*> ts) {
  for (auto i = ts.begin(); i != ts.end(); ++i) {
    for (auto j = i + 1; j != ts.end(); ++j) {
      if (!same_or_disjoint(**i, **j)) return false;
    }
  }
  return true;
}

}  // namespace strata::gpu
