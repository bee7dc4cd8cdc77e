// Internal to the reference: rows of host tensors read into floats and written back (through memcpy, so any
// alignment is fine), and the checks every op makes of its operands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/format/types.hpp"
#include "strata/plugin_api.h"

namespace strata::reference {

using format::GgmlType;

// Row (i1, i2, i3) of any decodable type as ne[0] floats.
std::vector<float> read_row(const strata_tensor& t, int64_t i1, int64_t i2 = 0, int64_t i3 = 0);
// Writes ne[0] floats into row (i1, i2, i3) of an F32 tensor.
void write_row(const strata_tensor& t, const float* values, int64_t i1, int64_t i2 = 0, int64_t i3 = 0);
// Element (i0, i1) of an I32 tensor (token ids, positions, expert ids).
int32_t read_i32(const strata_tensor& t, int64_t i0, int64_t i1 = 0);
void write_i32(const strata_tensor& t, int32_t value, int64_t i0, int64_t i1 = 0);

// Throws strata::Error "<OP>: <what> is <tensor>, expected <expected>" unless `ok`.
void require(bool ok, const char* op, const char* what, const strata_tensor& t, const std::string& expected);
void require_type(const char* op, const char* what, const strata_tensor& t, GgmlType type);
// Rows are contiguous: nb[0] is one element or block.
void require_contiguous_rows(const char* op, const char* what, const strata_tensor& t);
void require_data(const char* op, const char* what, const strata_tensor& t);
// A norm's optional f32 row of n values (a weight, a bias): empty when t has no data, else checked and read.
std::vector<float> optional_row(const char* op, const char* what, const strata_tensor& t, int64_t n);

// The row-wise ops' common head (norms, softmax, GELU): src0 and dst f32 of one shape, src0's rows contiguous.
void require_rowwise_f32(const char* op, const strata_tensor& x, const strata_tensor& dst);
// Reads each row (i1, i2, i3) of x in ascending order, lets `f` change it in place, writes it to dst's row.
template <class F>
void map_rows(const strata_tensor& x, const strata_tensor& dst, F&& f) {
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        std::vector<float> row = read_row(x, i1, i2, i3);
        f(row);
        write_row(dst, row.data(), i1, i2, i3);
      }
    }
  }
}

}  // namespace strata::reference
