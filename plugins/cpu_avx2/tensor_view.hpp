// Reading strata_tensor descriptors: row pointers; the shape checks come from the format library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/format/tensor_checks.hpp"
#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata::cpu {

using format::check_matrix;
using format::check_rows;
using format::is_type;
using format::row_count;
using format::type_name;

// Row i1 (of dimension 1) of a 2-D view.
template <class T = unsigned char>
T* row_ptr(const strata_tensor& t, int64_t i1) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(t.data) + static_cast<uint64_t>(i1) * t.nb[1]);
}

// For a row-wise op that reads each row of src before it writes that row of dst (same shapes, checked by the
// caller): nullopt when dst is src itself with the same row stride (in place) or lies apart from it, else why not.
inline std::optional<std::string> check_in_place(const strata_tensor& src, const strata_tensor& dst) {
  if (dst.data == src.data) {
    if (dst.nb[1] != src.nb[1] && row_count(dst) > 1) return std::string("dst is src0 with other row strides");
    return std::nullopt;
  }
  const auto span = [](const strata_tensor& t) {
    return static_cast<uint64_t>(row_count(t) - 1) * t.nb[1] + static_cast<uint64_t>(t.ne[0]) * t.nb[0];
  };
  const auto s = reinterpret_cast<uintptr_t>(src.data), d = reinterpret_cast<uintptr_t>(dst.data);
  if (d < s + span(src) && s < d + span(dst)) return std::string("dst overlaps src0 without being it (in place: dst = src0)");
  return std::nullopt;
}

}  // namespace strata::cpu
