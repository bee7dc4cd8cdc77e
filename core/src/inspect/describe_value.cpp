// Metadata values as one line of text, long ones summarized.
#include <string>

#include "strata/inspect.hpp"
#include "text_format.hpp"

namespace strata::inspect {
namespace {

using gguf::ValueType;

std::string scalar_text(const gguf::Value& v) {
  switch (v.type()) {
    case ValueType::F32: return detail::format_f32(static_cast<float>(*v.as_f64()));
    case ValueType::F64: return detail::format_f64(*v.as_f64());
    case ValueType::Bool: return *v.as_bool() ? "true" : "false";
    case ValueType::I8:
    case ValueType::I16:
    case ValueType::I32:
    case ValueType::I64: return std::to_string(*v.as_i64());
    default: return std::to_string(*v.as_u64());
  }
}

std::string string_text(std::string_view s, const Limits& limits, bool with_type) {
  if (s.size() <= limits.string_bytes) return with_type ? "string " + detail::quote(s) : detail::quote(s);
  return (with_type ? "string of " : "") + std::to_string(s.size()) +
         " bytes: " + detail::quote(detail::utf8_prefix(s, limits.string_bytes)) + " ...";
}

std::string describe(const gguf::Value& v, const Limits& limits, int depth);

std::string array_text(const gguf::ArrayView& a, const Limits& limits, int depth) {
  std::string out = "array of " + std::to_string(a.size()) + " " + std::string(gguf::value_type_name(a.element_type()));
  if (depth > detail::kMaxShownDepth) return out;
  const bool whole = a.size() <= limits.array_whole;
  const uint64_t shown = whole ? a.size() : limits.array_head;
  out += ": [";
  for (uint64_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    const gguf::Value e = a[i];
    // Elements drop the type word: the array's header already says it.
    if (e.type() == ValueType::String) {
      out += string_text(*e.as_string(), limits, false);
    } else if (e.type() == ValueType::Array) {
      out += describe(e, limits, depth + 1);
    } else {
      out += scalar_text(e);
    }
  }
  out += whole ? "]" : (shown > 0 ? ", ... ]" : "... ]");
  return out;
}

std::string describe(const gguf::Value& v, const Limits& limits, int depth) {
  switch (v.type()) {
    case ValueType::String: return string_text(*v.as_string(), limits, true);
    case ValueType::Array: return array_text(*v.as_array(), limits, depth);
    default: return std::string(gguf::value_type_name(v.type())) + " " + scalar_text(v);
  }
}

}  // namespace

std::string describe_value(const gguf::Value& value, const Limits& limits) { return describe(value, limits, 1); }

}  // namespace strata::inspect
