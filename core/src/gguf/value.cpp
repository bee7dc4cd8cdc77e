// Metadata values as views into a file's bytes: value types, scalar conversions, arrays.
#include <charconv>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "store.hpp"

namespace strata::gguf {
namespace {

constexpr uint64_t kArrayHeaderBytes = 4 + 8;  // element type, count
constexpr size_t kDescribeStringMax = 40;

std::string format_double(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

template <class T>
std::optional<T> fit_unsigned(std::optional<uint64_t> v) {
  if (!v || *v > std::numeric_limits<T>::max()) return std::nullopt;
  return static_cast<T>(*v);
}

template <class T>
std::optional<T> fit_signed(std::optional<int64_t> v) {
  if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) return std::nullopt;
  return static_cast<T>(*v);
}

// Converts every element with `one`, or nullopt at the first that does not convert. Elements already of
// type T (`same`) are copied in one go: vocabularies' scores and token types are 100k+ long.
template <class T, class One>
std::optional<std::vector<T>> convert_all(const ArrayView& a, ValueType same, const One& one) {
  std::vector<T> out;
  if (a.element_type() == same) {
    out.resize(a.size());
    if (!out.empty()) std::memcpy(out.data(), a.element_bytes().data(), a.size() * sizeof(T));
    return out;
  }
  out.reserve(a.size());
  for (uint64_t i = 0; i < a.size(); ++i) {
    const std::optional<T> v = one(a[i]);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::Bool: return "bool";
    case ValueType::String: return "string";
    case ValueType::Array: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown type";
}

size_t value_type_size(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::Bool: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    case ValueType::String:
    case ValueType::Array: return 0;
  }
  return 0;
}

bool is_integer(ValueType type) {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64: return true;
    default: return false;
  }
}

uint64_t Value::file_offset() const { return static_cast<uint64_t>(raw_ - store_->base); }

std::optional<uint64_t> Value::as_u64() const {
  using detail::load;
  switch (type_) {
    case ValueType::U8: return load<uint8_t>(raw_);
    case ValueType::U16: return load<uint16_t>(raw_);
    case ValueType::U32: return load<uint32_t>(raw_);
    case ValueType::U64: return load<uint64_t>(raw_);
    case ValueType::I8:
    case ValueType::I16:
    case ValueType::I32:
    case ValueType::I64: {
      const std::optional<int64_t> s = as_i64();
      if (*s < 0) return std::nullopt;
      return static_cast<uint64_t>(*s);
    }
    default: return std::nullopt;
  }
}

std::optional<int64_t> Value::as_i64() const {
  using detail::load;
  switch (type_) {
    case ValueType::I8: return load<int8_t>(raw_);
    case ValueType::I16: return load<int16_t>(raw_);
    case ValueType::I32: return load<int32_t>(raw_);
    case ValueType::I64: return load<int64_t>(raw_);
    case ValueType::U8:
    case ValueType::U16:
    case ValueType::U32:
    case ValueType::U64: {
      const std::optional<uint64_t> u = as_u64();
      if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(*u);
    }
    default: return std::nullopt;
  }
}

std::optional<double> Value::as_f64() const {
  if (type_ == ValueType::F32) return static_cast<double>(detail::load<float>(raw_));
  if (type_ == ValueType::F64) return detail::load<double>(raw_);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (type_ != ValueType::Bool) return std::nullopt;
  return raw_[0] != 0;
}

std::optional<std::string_view> Value::as_string() const {
  if (type_ != ValueType::String) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(raw_) + 8, count_);
}

std::optional<ArrayView> Value::as_array() const {
  if (type_ != ValueType::Array) return std::nullopt;
  return ArrayView(*this);
}

std::string Value::describe() const {
  const std::string type(value_type_name(type_));
  if (is_integer(type_)) {
    if (const std::optional<int64_t> s = as_i64()) return type + " " + std::to_string(*s);
    return type + " " + std::to_string(*as_u64());
  }
  switch (type_) {
    case ValueType::F32:
    case ValueType::F64: return type + " " + format_double(*as_f64());
    case ValueType::Bool: return *as_bool() ? "bool true" : "bool false";
    case ValueType::String: {
      const std::string_view s = *as_string();
      if (s.size() <= kDescribeStringMax) return "string \"" + std::string(s) + "\"";
      return "string \"" + std::string(s.substr(0, kDescribeStringMax)) + "...\" (" + std::to_string(s.size()) +
             " bytes)";
    }
    case ValueType::Array:
      return "array of " + std::to_string(count_) + " " + std::string(value_type_name(element_type_));
    default: return type;
  }
}

Value ArrayView::operator[](uint64_t i) const {
  if (i >= value_.count_) {
    throw std::out_of_range("GGUF array index " + std::to_string(i) + " out of range (size " +
                            std::to_string(value_.count_) + ")");
  }
  switch (value_.element_type_) {
    case ValueType::String: {
      const std::string_view s = value_.store_->string_pool[value_.pool_begin_ + i];
      Value v;
      v.store_ = value_.store_;
      v.type_ = ValueType::String;
      v.raw_ = reinterpret_cast<const uint8_t*>(s.data()) - 8;
      v.raw_size_ = 8 + s.size();
      v.count_ = s.size();
      return v;
    }
    case ValueType::Array: return value_.store_->array_pool[value_.pool_begin_ + i];
    default: {
      const size_t n = value_type_size(value_.element_type_);
      Value v;
      v.store_ = value_.store_;
      v.type_ = value_.element_type_;
      v.raw_ = value_.raw_ + kArrayHeaderBytes + i * n;
      v.raw_size_ = n;
      return v;
    }
  }
}

std::span<const std::string_view> ArrayView::strings() const {
  if (value_.element_type_ != ValueType::String) return {};
  return {value_.store_->string_pool.data() + value_.pool_begin_, value_.count_};
}

std::span<const Value> ArrayView::arrays() const {
  if (value_.element_type_ != ValueType::Array) return {};
  return {value_.store_->array_pool.data() + value_.pool_begin_, value_.count_};
}

std::span<const uint8_t> ArrayView::element_bytes() const {
  const size_t n = value_type_size(value_.element_type_);
  if (n == 0) return {};
  return {value_.raw_ + kArrayHeaderBytes, value_.count_ * n};
}

std::optional<std::vector<int64_t>> ArrayView::to_i64() const {
  return convert_all<int64_t>(*this, ValueType::I64, [](const Value& v) { return v.as_i64(); });
}

std::optional<std::vector<uint64_t>> ArrayView::to_u64() const {
  return convert_all<uint64_t>(*this, ValueType::U64, [](const Value& v) { return v.as_u64(); });
}

std::optional<std::vector<int32_t>> ArrayView::to_i32() const {
  return convert_all<int32_t>(*this, ValueType::I32, [](const Value& v) { return fit_signed<int32_t>(v.as_i64()); });
}

std::optional<std::vector<uint32_t>> ArrayView::to_u32() const {
  return convert_all<uint32_t>(*this, ValueType::U32,
                               [](const Value& v) { return fit_unsigned<uint32_t>(v.as_u64()); });
}

std::optional<std::vector<double>> ArrayView::to_f64() const {
  return convert_all<double>(*this, ValueType::F64, [](const Value& v) { return v.as_f64(); });
}

std::optional<std::vector<float>> ArrayView::to_f32() const {
  return convert_all<float>(*this, ValueType::F32, [](const Value& v) -> std::optional<float> {
    const std::optional<double> d = v.as_f64();
    if (!d) return std::nullopt;
    return static_cast<float>(*d);
  });
}

}  // namespace strata::gguf
