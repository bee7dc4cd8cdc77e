// Arrays for the writer, encoded element by element as they are added.
#include <stdexcept>
#include <string>

#include "encode.hpp"
#include "strata/gguf.hpp"

namespace strata::gguf {

ArrayBuilder::ArrayBuilder(ValueType element_type) : element_type_(element_type) {
  if (static_cast<uint32_t>(element_type) > static_cast<uint32_t>(ValueType::F64)) {
    throw std::invalid_argument("GGUF array: unknown element type " +
                                std::to_string(static_cast<uint32_t>(element_type)));
  }
}

void ArrayBuilder::expect(ValueType t) const {
  if (t != element_type_) {
    throw std::invalid_argument("GGUF array of " + std::string(value_type_name(element_type_)) + ": cannot add a " +
                                std::string(value_type_name(t)));
  }
}

template <class T>
ArrayBuilder& ArrayBuilder::add_fixed(ValueType type, T v) {
  expect(type);
  detail::append<T>(elements_, v);
  ++count_;
  return *this;
}

ArrayBuilder& ArrayBuilder::add_u8(uint8_t v) { return add_fixed(ValueType::U8, v); }
ArrayBuilder& ArrayBuilder::add_i8(int8_t v) { return add_fixed(ValueType::I8, v); }
ArrayBuilder& ArrayBuilder::add_u16(uint16_t v) { return add_fixed(ValueType::U16, v); }
ArrayBuilder& ArrayBuilder::add_i16(int16_t v) { return add_fixed(ValueType::I16, v); }
ArrayBuilder& ArrayBuilder::add_u32(uint32_t v) { return add_fixed(ValueType::U32, v); }
ArrayBuilder& ArrayBuilder::add_i32(int32_t v) { return add_fixed(ValueType::I32, v); }
ArrayBuilder& ArrayBuilder::add_u64(uint64_t v) { return add_fixed(ValueType::U64, v); }
ArrayBuilder& ArrayBuilder::add_i64(int64_t v) { return add_fixed(ValueType::I64, v); }
ArrayBuilder& ArrayBuilder::add_f32(float v) { return add_fixed(ValueType::F32, v); }
ArrayBuilder& ArrayBuilder::add_f64(double v) { return add_fixed(ValueType::F64, v); }
ArrayBuilder& ArrayBuilder::add_bool(bool v) { return add_fixed<uint8_t>(ValueType::Bool, v ? 1 : 0); }

ArrayBuilder& ArrayBuilder::add_string(std::string_view v) {
  expect(ValueType::String);
  detail::append_string(elements_, v);
  ++count_;
  return *this;
}

ArrayBuilder& ArrayBuilder::add_array(const ArrayBuilder& v) {
  expect(ValueType::Array);
  const std::vector<uint8_t> encoded = v.encode();
  detail::append_bytes(elements_, encoded.data(), encoded.size());
  ++count_;
  return *this;
}

ArrayBuilder& ArrayBuilder::add(const Value& v) {
  expect(v.type());
  const std::span<const uint8_t> bytes = v.encoded();
  detail::append_bytes(elements_, bytes.data(), bytes.size());
  ++count_;
  return *this;
}

std::vector<uint8_t> ArrayBuilder::encode() const {
  std::vector<uint8_t> out;
  out.reserve(12 + elements_.size());
  detail::append<uint32_t>(out, static_cast<uint32_t>(element_type_));
  detail::append<uint64_t>(out, count_);
  detail::append_bytes(out, elements_.data(), elements_.size());
  return out;
}

}  // namespace strata::gguf
