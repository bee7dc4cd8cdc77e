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

}  // namespace strata::cpu
