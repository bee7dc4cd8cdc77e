// Reading strata_tensor descriptors: sizes, strides and row pointers, and the shape checks ops share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata::cpu {

inline bool is_type(const strata_tensor& t, format::GgmlType type) {
  return t.type == static_cast<uint32_t>(type);
}

// Rows of a tensor (everything past dimension 0).
inline int64_t row_count(const strata_tensor& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

// Row i1 (of dimension 1) of a 2-D view.
template <class T = unsigned char>
T* row_ptr(const strata_tensor& t, int64_t i1) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(t.data) + static_cast<uint64_t>(i1) * t.nb[1]);
}

// Why `t` is not a dense 2-D tensor of `type` whose rows are contiguous (nb[0] the element or block size,
// dimensions 2 and 3 of size 1), or nullopt when it is. `what` names the operand in the message.
std::optional<std::string> check_matrix(const strata_tensor& t, const char* what);
// Same, and the type must be `type`.
std::optional<std::string> check_matrix(const strata_tensor& t, const char* what, format::GgmlType type);

// Why `t` is not a tensor of `type` whose rows (everything past dimension 0) are evenly spaced nb[1] apart with
// dimension 0 contiguous, or nullopt when it is. Row r of such a tensor is row_ptr(t, r).
std::optional<std::string> check_rows(const strata_tensor& t, const char* what, format::GgmlType type);

std::string type_name(uint32_t type);

}  // namespace strata::cpu
