// Python's json.dumps (the separators, indentation, ensure_ascii escapes and float repr it writes) and the
// conversion of request JSON into template values.
#include "json_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "builtins.hpp"

namespace strata::chat {
namespace {

template <typename J>
Value convert(const J& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::from(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::from(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::from(static_cast<int64_t>(u));
      return Value::from(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::from(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::from(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      for (const auto& e : j) items.push_back(convert(e));
      return Value::from_list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Value d = Value::new_dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.dict->items.emplace_back(Value::from(it.key()), convert(it.value()));
      return d;
    }
    default: fail("TypeError: unsupported JSON value");
  }
}

void write_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (const char32_t c : utf8_decode(s)) {
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
      if (c > 0xFFFF) {
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return format_float(d);
}

// A dict key as json.dumps turns it into a string.
std::string key_text(const Value& k) {
  switch (k.kind) {
    case Value::Kind::String: return k.text;
    case Value::Kind::Int: return std::to_string(k.integer);
    case Value::Kind::Float: return float_json(k.number);
    case Value::Kind::Bool: return k.boolean ? "true" : "false";
    case Value::Kind::None: return "null";
    default: fail("TypeError: keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void write(std::string& out, const Value& v, const JsonStyle& st, int level) {
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *st.indent;
  };
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.boolean ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.integer); return;
    case Value::Kind::Float: out += float_json(v.number); return;
    case Value::Kind::String: write_string(out, v.text, st.ensure_ascii); return;
    case Value::Kind::List: {
      if (v.list->generator) break;
      if (v.list->items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->items.size(); ++i) {
        if (i > 0) out += st.item_separator;
        if (st.indent) newline(level + 1);
        write(out, v.list->items[i], st, level + 1);
      }
      if (st.indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.dict->is_namespace) break;
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, val] : v.dict->items) entries.emplace_back(key_text(k), &val);
      if (st.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += st.item_separator;
        if (st.indent) newline(level + 1);
        write_string(out, entries[i].first, st.ensure_ascii);
        out += st.key_separator;
        write(out, *entries[i].second, st, level + 1);
      }
      if (st.indent) newline(level);
      out += '}';
      return;
    }
    default: break;
  }
  fail("TypeError: Object of type " + type_name(v) + " is not JSON serializable");
}

}  // namespace

Value from_json(const nlohmann::json& j) { return convert(j); }
Value from_json(const nlohmann::ordered_json& j) { return convert(j); }

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  write(out, v, style, 0);
  return out;
}

}  // namespace strata::chat
