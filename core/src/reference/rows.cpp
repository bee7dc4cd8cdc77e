#include "rows.hpp"

#include <cstring>

#include "strata/error.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {

std::vector<float> read_row(const strata_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  std::vector<float> row(static_cast<size_t>(t.ne[0]));
  format::dequantize_row(tensor_type(t), tensor_row(t, i1, i2, i3), row.data(), t.ne[0]);
  return row;
}

void write_row(const strata_tensor& t, const float* values, int64_t i1, int64_t i2, int64_t i3) {
  std::memcpy(tensor_row(t, i1, i2, i3), values, static_cast<size_t>(t.ne[0]) * sizeof(float));
}

int32_t read_i32(const strata_tensor& t, int64_t i0, int64_t i1) {
  int32_t v;
  std::memcpy(&v, tensor_row(t, i1) + static_cast<uint64_t>(i0) * t.nb[0], sizeof v);
  return v;
}

void write_i32(const strata_tensor& t, int32_t value, int64_t i0, int64_t i1) {
  std::memcpy(tensor_row(t, i1) + static_cast<uint64_t>(i0) * t.nb[0], &value, sizeof value);
}

void require(bool ok, const char* op, const char* what, const strata_tensor& t, const std::string& expected) {
  if (!ok) throw Error(std::string(op) + ": " + what + " is " + describe_tensor(t) + ", expected " + expected);
}

void require_type(const char* op, const char* what, const strata_tensor& t, GgmlType type) {
  require(t.type == static_cast<uint32_t>(type), op, what, t, std::string(format::traits(type).name));
}

void require_contiguous_rows(const char* op, const char* what, const strata_tensor& t) {
  const auto tr = format::type_traits(t.type);
  require(tr.has_value() && t.nb[0] == tr->block_bytes, op, what, t, "rows of contiguous elements");
}

void require_data(const char* op, const char* what, const strata_tensor& t) {
  require(t.data != nullptr, op, what, t, "a tensor with data");
}

std::vector<float> optional_row(const char* op, const char* what, const strata_tensor& t, int64_t n) {
  if (t.data == nullptr) return {};
  require_type(op, what, t, GgmlType::F32);
  require(t.ne[0] == n, op, what, t, "one row as long as src0's");
  return read_row(t, 0);
}

void require_rowwise_f32(const char* op, const strata_tensor& x, const strata_tensor& dst) {
  require_type(op, "src0", x, GgmlType::F32);
  require_type(op, "dst", dst, GgmlType::F32);
  require_contiguous_rows(op, "src0", x);
  require(dst.ne[0] == x.ne[0] && dst.ne[1] == x.ne[1] && dst.ne[2] == x.ne[2] && dst.ne[3] == x.ne[3], op, "dst",
          dst, "the shape of src0");
}

}  // namespace strata::reference
