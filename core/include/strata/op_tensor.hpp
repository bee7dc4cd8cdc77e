// Describing host memory as strata_tensor (plugin_api.h) for the op lists: contiguous tensors in ggml's layout
// (ne[0] innermost; nb[0] the size of one element or block, nb[1] a row's bytes, then products), views of GGUF
// tensors, and column ranges.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "strata/format/types.hpp"
#include "strata/gguf.hpp"
#include "strata/plugin_api.h"

namespace strata {

// A contiguous tensor of `type` over `data` with dimensions ne (1 to 4 of them, ne[0] a whole number of blocks).
strata_tensor make_tensor(const void* data, format::GgmlType type, std::initializer_list<int64_t> ne);
inline strata_tensor tensor_f32(const float* data, std::initializer_list<int64_t> ne) {
  return make_tensor(data, format::GgmlType::F32, ne);
}
inline strata_tensor tensor_i32(const int32_t* data, std::initializer_list<int64_t> ne) {
  return make_tensor(data, format::GgmlType::I32, ne);
}
// The GGUF tensor in place (memory-mapped bytes; nothing is copied).
strata_tensor tensor_of(const gguf::TensorView& view);
// A tensor with no data: an optional source that is absent.
strata_tensor no_tensor();
// An op of `kind` with every tensor absent and every parameter zero.
strata_op new_op(uint32_t kind);

format::GgmlType tensor_type(const strata_tensor& t);
// ne[0] * ne[1] * ne[2] * ne[3].
int64_t tensor_elements(const strata_tensor& t);
// Byte address of row (i1, i2, i3): the start of ne[0] elements (or blocks holding them).
unsigned char* tensor_row(const strata_tensor& t, int64_t i1, int64_t i2 = 0, int64_t i3 = 0);
// "f32 [64, 7]" for messages.
std::string describe_tensor(const strata_tensor& t);

}  // namespace strata
