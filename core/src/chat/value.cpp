// Python semantics of template values: truth, str()/repr(), equality, ordering, len(), iteration, `in`.
#include "value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "../tokenizer/utf8.hpp"
#include "text.hpp"

namespace strata::chat {

void fail(const std::string& message) { throw EvalError(message); }

std::optional<int64_t> parse_decimal(std::string_view digits) {
  int64_t n = 0;
  if (digits.empty()) return std::nullopt;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, c - '0', &n)) return std::nullopt;
  }
  return n;
}

size_t checked_size(int64_t n) {
  constexpr int64_t kMax = int64_t{1} << 28;
  if (n > kMax) fail("MemoryError: a size of " + std::to_string(n) + " is more than this renderer allows");
  return n < 0 ? 0 : static_cast<size_t>(n);
}

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.kind == Value::Kind::String && k.text == key) return &v;
  }
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

namespace {
thread_local ContainerArena* current_arena = nullptr;
}  // namespace

ContainerArena::ContainerArena() : outer_(current_arena) { current_arena = this; }

ContainerArena::~ContainerArena() {
  current_arena = outer_;
  // Emptying breaks every cycle; the containers then go as their last owners do.
  for (auto& w : lists_) {
    if (auto l = w.lock()) std::vector<Value>().swap(l->items);
  }
  for (auto& w : dicts_) {
    if (auto d = w.lock()) std::vector<std::pair<Value, Value>>().swap(d->items);
  }
}

void ContainerArena::compact() {
  std::erase_if(lists_, [](const auto& w) { return w.expired(); });
  std::erase_if(dicts_, [](const auto& w) { return w.expired(); });
  compact_at_ = std::max<size_t>(4096, 2 * (lists_.size() + dicts_.size()));
}

void ContainerArena::track(const std::shared_ptr<ListData>& list) {
  if (current_arena == nullptr) return;
  current_arena->lists_.push_back(list);
  if (current_arena->lists_.size() + current_arena->dicts_.size() >= current_arena->compact_at_) current_arena->compact();
}

void ContainerArena::track(const std::shared_ptr<DictData>& dict) {
  if (current_arena == nullptr) return;
  current_arena->dicts_.push_back(dict);
  if (current_arena->lists_.size() + current_arena->dicts_.size() >= current_arena->compact_at_) current_arena->compact();
}

Value Value::undefined(std::string why) {
  Value v;
  v.text = std::move(why);
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::None;
  return v;
}
Value Value::from(bool b) {
  Value v;
  v.kind = Kind::Bool;
  v.boolean = b;
  return v;
}
Value Value::from(int64_t i) {
  Value v;
  v.kind = Kind::Int;
  v.integer = i;
  return v;
}
Value Value::from(double d) {
  Value v;
  v.kind = Kind::Float;
  v.number = d;
  return v;
}
Value Value::from(std::string s) {
  Value v;
  v.kind = Kind::String;
  v.text = std::move(s);
  return v;
}
Value Value::from_list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind = Kind::List;
  v.list = std::make_shared<ListData>();
  ContainerArena::track(v.list);
  v.list->items = std::move(items);
  v.list->tuple = tuple;
  return v;
}
Value Value::generator(std::vector<Value> items) {
  Value v = from_list(std::move(items));
  v.list->generator = true;
  return v;
}
Value Value::new_dict() {
  Value v;
  v.kind = Kind::Dict;
  v.dict = std::make_shared<DictData>();
  ContainerArena::track(v.dict);
  return v;
}
Value Value::from_function(std::string name, std::function<Value(CallArgs&)> call) {
  Value v;
  v.kind = Kind::Function;
  v.function = std::make_shared<Callable>(Callable{std::move(name), std::move(call)});
  return v;
}

double Value::as_double() const {
  switch (kind) {
    case Kind::Bool: return boolean ? 1.0 : 0.0;
    case Kind::Int: return static_cast<double>(integer);
    case Kind::Float: return number;
    default: fail("'" + type_name(*this) + "' is not a number");
  }
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return v.list->generator ? "generator" : v.list->tuple ? "tuple" : "list";
    case Value::Kind::Dict: return v.dict->is_namespace ? "Namespace" : "dict";
    case Value::Kind::Function: return "function";
  }
  return "object";
}

void fail_undefined(const Value& v) {
  if (v.unsafe) fail("SecurityError: " + v.text);
  fail("UndefinedError: " + (v.text.empty() ? std::string("undefined value") : v.text));
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.boolean;
    case Value::Kind::Int: return v.integer != 0;
    case Value::Kind::Float: return v.number != 0.0;
    case Value::Kind::String: return !v.text.empty();
    case Value::Kind::List: return v.list->generator || !v.list->items.empty();
    case Value::Kind::Dict: return v.dict->is_namespace || !v.dict->items.empty();
    case Value::Kind::Function: return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]D[.DDD]e(+|-)XX: split it into sign, significant digits and decimal exponent.
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  const int exponent = std::stoi(sci.substr(e + 1));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mant + exp;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char32_t c : utf8_decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py_isprintable(c)) {
      char buf[16];
      if (c <= 0xFF) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      } else if (c <= 0xFFFF) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::String: return repr_string(v.text);
    case Value::Kind::List: {
      if (v.list->generator) return "<generator object>";
      std::string out = v.list->tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += repr(v.list->items[i]);
      }
      if (v.list->tuple && v.list->items.size() == 1) out += ",";
      return out + (v.list->tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = v.dict->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, val] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(val);
      }
      return out + (v.dict->is_namespace ? "}>" : "}");
    }
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.boolean ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.integer);
    case Value::Kind::Float: return format_float(v.number);
    case Value::Kind::String: return v.text;
    case Value::Kind::Function: return "<function " + v.function->name + ">";
    default: return repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) {
      const int64_t x = a.kind == Value::Kind::Bool ? a.boolean : a.integer;
      const int64_t y = b.kind == Value::Kind::Bool ? b.boolean : b.integer;
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.text == b.text;
    case Value::Kind::List: {
      if (a.list == b.list) return true;
      if (a.list->tuple != b.list->tuple || a.list->generator || b.list->generator) return false;
      if (a.list->items.size() != b.list->items.size()) return false;
      for (size_t i = 0; i < a.list->items.size(); ++i) {
        if (!equals(a.list->items[i], b.list->items[i])) return false;
      }
      return true;
    }
    case Value::Kind::Dict: {
      if (a.dict == b.dict) return true;
      if (a.dict->is_namespace || b.dict->is_namespace) return false;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->find(k);
        if (other == nullptr || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::Function: return a.function == b.function;
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::Float && b.kind != Value::Kind::Float) {
      const int64_t x = a.kind == Value::Kind::Bool ? a.boolean : a.integer;
      const int64_t y = b.kind == Value::Kind::Bool ? b.boolean : b.integer;
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = a.as_double(), y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;  // UTF-8 keeps code point order
  if (a.is_list() && b.is_list() && a.list->tuple == b.list->tuple && !a.list->generator && !b.list->generator) {
    const auto& x = a.list->items;
    const auto& y = b.list->items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("TypeError: '<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t length(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(utf8_decode(v.text).size());
    case Value::Kind::List:
      if (v.list->generator) break;
      return static_cast<int64_t>(v.list->items.size());
    case Value::Kind::Dict:
      if (v.dict->is_namespace) break;
      return static_cast<int64_t>(v.dict->items.size());
    default: break;
  }
  fail("TypeError: object of type '" + type_name(v) + "' has no len()");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.list->items;
    case Value::Kind::Dict: {
      if (v.dict->is_namespace) break;
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict->items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      for (const char32_t c : utf8_decode(v.text)) {
        std::string s;
        utf8_append(s, c);
        chars.push_back(Value::from(std::move(s)));
      }
      return chars;
    }
    default: break;
  }
  fail("TypeError: '" + type_name(v) + "' object is not iterable");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.is_string()) fail("TypeError: 'in <string>' requires string as left operand, not " + type_name(item));
      return container.text.find(item.text) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.list->items) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::Dict:
      if (container.dict->is_namespace) break;
      return container.dict->find(item) != nullptr;
    default: break;
  }
  fail("TypeError: argument of type '" + type_name(container) + "' is not iterable");
}

// The tokenizer's UTF-8 rules (ill-formed input: one U+FFFD per maximal subpart, as Python's "replace" decoding).
std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const tokenizer_detail::Utf8Char c = tokenizer_detail::decode_utf8(s, i);
    out += static_cast<char32_t>(c.status == tokenizer_detail::Utf8Status::Valid ? c.code_point
                                                                                 : tokenizer_detail::kReplacementCharacter);
    i += c.length;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) { tokenizer_detail::append_utf8(out, static_cast<uint32_t>(c)); }

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char32_t c : s) utf8_append(out, c);
  return out;
}

}  // namespace strata::chat
