// Typed access to a file's key/values: the getters that turn a missing or mistyped key into a message naming
// the key, the file and what was found.
#include <limits>
#include <string>

#include "store.hpp"
#include "strata/suggest.hpp"

namespace strata::gguf {
namespace {

[[noreturn]] void missing(const detail::Store& s, std::string_view key) {
  std::vector<std::string> keys;
  keys.reserve(s.kvs.size());
  for (const KeyValue& kv : s.kvs) keys.emplace_back(kv.key);
  throw MetadataError(s.name + ": metadata key '" + std::string(key) + "' is missing" + did_you_mean(key, keys));
}

[[noreturn]] void wrong(const detail::Store& s, const KeyValue& kv, const std::string& problem) {
  throw MetadataError(s.name + ": byte " + std::to_string(kv.file_offset) + ": metadata key '" + std::string(kv.key) +
                      "' is " + kv.value.describe() + problem);
}

[[noreturn]] void wrong_type(const detail::Store& s, const KeyValue& kv, std::string_view expected) {
  wrong(s, kv, ", expected " + std::string(expected));
}

[[noreturn]] void does_not_fit(const detail::Store& s, const KeyValue& kv, std::string_view target) {
  wrong(s, kv, ", which does not fit in " + std::string(target));
}

template <class T>
constexpr std::string_view int_name() {
  if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  if constexpr (std::is_same_v<T, int8_t>) return "i8";
  if constexpr (std::is_same_v<T, uint16_t>) return "u16";
  if constexpr (std::is_same_v<T, int16_t>) return "i16";
  if constexpr (std::is_same_v<T, uint32_t>) return "u32";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  if constexpr (std::is_same_v<T, uint64_t>) return "u64";
  return "i64";
}

// Any integer type whose value fits in T.
template <class T>
std::optional<T> find_int(const detail::Store& s, const KeyValue* kv) {
  if (kv == nullptr) return std::nullopt;
  if (!is_integer(kv->value.type())) wrong_type(s, *kv, int_name<T>());
  if constexpr (std::is_unsigned_v<T>) {
    const std::optional<uint64_t> u = kv->value.as_u64();
    if (!u || *u > std::numeric_limits<T>::max()) does_not_fit(s, *kv, int_name<T>());
    return static_cast<T>(*u);
  } else {
    const std::optional<int64_t> v = kv->value.as_i64();
    if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) {
      does_not_fit(s, *kv, int_name<T>());
    }
    return static_cast<T>(*v);
  }
}

template <class T>
T require(const detail::Store& s, std::string_view key, std::optional<T> v) {
  if (!v) missing(s, key);
  return *v;
}

}  // namespace

std::span<const KeyValue> Metadata::entries() const { return store_->kvs; }

const KeyValue* Metadata::find(std::string_view key) const {
  const auto it = store_->kv_index.find(key);
  return it == store_->kv_index.end() ? nullptr : &store_->kvs[it->second];
}

const std::string& Metadata::file_name() const { return store_->name; }

std::optional<uint8_t> Metadata::find_u8(std::string_view key) const { return find_int<uint8_t>(*store_, find(key)); }
std::optional<int8_t> Metadata::find_i8(std::string_view key) const { return find_int<int8_t>(*store_, find(key)); }
std::optional<uint16_t> Metadata::find_u16(std::string_view key) const {
  return find_int<uint16_t>(*store_, find(key));
}
std::optional<int16_t> Metadata::find_i16(std::string_view key) const { return find_int<int16_t>(*store_, find(key)); }
std::optional<uint32_t> Metadata::find_u32(std::string_view key) const {
  return find_int<uint32_t>(*store_, find(key));
}
std::optional<int32_t> Metadata::find_i32(std::string_view key) const { return find_int<int32_t>(*store_, find(key)); }
std::optional<uint64_t> Metadata::find_u64(std::string_view key) const {
  return find_int<uint64_t>(*store_, find(key));
}
std::optional<int64_t> Metadata::find_i64(std::string_view key) const { return find_int<int64_t>(*store_, find(key)); }

std::optional<double> Metadata::find_f64(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  const std::optional<double> v = kv->value.as_f64();
  if (!v) wrong_type(*store_, *kv, "f32 or f64");
  return v;
}

std::optional<float> Metadata::find_f32(std::string_view key) const {
  const std::optional<double> v = find_f64(key);
  if (!v) return std::nullopt;
  return static_cast<float>(*v);
}

std::optional<bool> Metadata::find_bool(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  const std::optional<bool> v = kv->value.as_bool();
  if (!v) wrong_type(*store_, *kv, "bool");
  return v;
}

std::optional<std::string_view> Metadata::find_string(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  const std::optional<std::string_view> v = kv->value.as_string();
  if (!v) wrong_type(*store_, *kv, "string");
  return v;
}

std::optional<ArrayView> Metadata::find_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  const std::optional<ArrayView> v = kv->value.as_array();
  if (!v) wrong_type(*store_, *kv, "array");
  return v;
}

std::optional<std::span<const std::string_view>> Metadata::find_string_array(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  const std::optional<ArrayView> v = kv->value.as_array();
  if (!v || v->element_type() != ValueType::String) wrong_type(*store_, *kv, "array of string");
  return v->strings();
}

uint8_t Metadata::get_u8(std::string_view key) const { return require(*store_, key, find_u8(key)); }
int8_t Metadata::get_i8(std::string_view key) const { return require(*store_, key, find_i8(key)); }
uint16_t Metadata::get_u16(std::string_view key) const { return require(*store_, key, find_u16(key)); }
int16_t Metadata::get_i16(std::string_view key) const { return require(*store_, key, find_i16(key)); }
uint32_t Metadata::get_u32(std::string_view key) const { return require(*store_, key, find_u32(key)); }
int32_t Metadata::get_i32(std::string_view key) const { return require(*store_, key, find_i32(key)); }
uint64_t Metadata::get_u64(std::string_view key) const { return require(*store_, key, find_u64(key)); }
int64_t Metadata::get_i64(std::string_view key) const { return require(*store_, key, find_i64(key)); }
float Metadata::get_f32(std::string_view key) const { return require(*store_, key, find_f32(key)); }
double Metadata::get_f64(std::string_view key) const { return require(*store_, key, find_f64(key)); }
bool Metadata::get_bool(std::string_view key) const { return require(*store_, key, find_bool(key)); }
std::string_view Metadata::get_string(std::string_view key) const { return require(*store_, key, find_string(key)); }
ArrayView Metadata::get_array(std::string_view key) const { return require(*store_, key, find_array(key)); }
std::span<const std::string_view> Metadata::get_string_array(std::string_view key) const {
  return require(*store_, key, find_string_array(key));
}

std::vector<int32_t> Metadata::get_i32_array(std::string_view key) const {
  const ArrayView a = get_array(key);
  const KeyValue& kv = *find(key);
  if (!is_integer(a.element_type())) wrong_type(*store_, kv, "array of integers (i32)");
  std::optional<std::vector<int32_t>> v = a.to_i32();
  if (v) return std::move(*v);
  const auto fits = [](const Value& e) {
    const std::optional<int64_t> x = e.as_i64();
    return x && *x >= INT32_MIN && *x <= INT32_MAX;
  };
  uint64_t i = 0;
  while (fits(a[i])) ++i;
  wrong(*store_, kv, ": element [" + std::to_string(i) + "] (" + a[i].describe() + ") does not fit in i32");
}

std::vector<float> Metadata::get_f32_array(std::string_view key) const {
  const ArrayView a = get_array(key);
  std::optional<std::vector<float>> v = a.to_f32();
  if (!v) wrong_type(*store_, *find(key), "array of f32");
  return std::move(*v);
}

}  // namespace strata::gguf
