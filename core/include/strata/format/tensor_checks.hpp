// Checks of strata_tensor descriptors that every backend plugin makes before it runs an op: is a tensor a dense
// matrix of whole blocks, are its rows evenly spaced. They read only the descriptor (never `data`), so they hold
// for host and device memory alike. Each returns why not, or nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata::format {

inline bool is_type(const strata_tensor& t, GgmlType type) { return t.type == static_cast<uint32_t>(type); }

// Rows of a tensor (everything past dimension 0).
inline int64_t row_count(const strata_tensor& t) { return t.ne[1] * t.ne[2] * t.ne[3]; }

// Why an array of n ops cannot be read with this build's sizeof(strata_op) (backend 1.6 appended src4, and ops travel
// in arrays: a host of another size would be misread), or nullopt.
std::optional<std::string> check_op_array(const strata_op* ops, size_t n);

// "q4_K", or "type 99" for an id the library does not know.
std::string type_name(uint32_t type);

// Why `t` is not a dense 2-D tensor whose rows are contiguous (nb[0] the element or block size, dimensions 2 and 3
// of size 1), or nullopt when it is. `what` names the operand in the message.
std::optional<std::string> check_matrix(const strata_tensor& t, const char* what);
// Same, and the type must be `type`.
std::optional<std::string> check_matrix(const strata_tensor& t, const char* what, GgmlType type);

// Why `t` is not a tensor of `type` whose rows (everything past dimension 0) are evenly spaced nb[1] apart with
// dimension 0 contiguous, or nullopt when it is.
std::optional<std::string> check_rows(const strata_tensor& t, const char* what, GgmlType type);

}  // namespace strata::format
