// The filters, tests, global functions and methods a template can call: jinja2's built-ins plus what
// transformers adds (tojson with its arguments, raise_exception, strftime_now).
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "value.hpp"

namespace strata::chat {

// None, which the built-ins return and compare against.
inline const Value kNone = Value::none();

class Interpreter;  // filters and tests call back into it: another filter or test, a macro, attribute lookup

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& input, CallArgs& args);

FilterFn find_filter(std::string_view name);  // null when there is none
TestFn find_test(std::string_view name);

// A global function (range, dict, namespace, cycler, joiner, raise_exception, strftime_now), or Undefined.
Value find_global(std::string_view name, const std::chrono::system_clock::time_point* now);

// `value.name` where value is a str, list or dict and name is one of its Python methods: the bound method.
// Undefined when it has no such method; an unsafe Undefined for those the immutable sandbox refuses.
Value find_method(const Value& value, const std::string& name, bool* found);

// Arguments bound to a Python-style signature: positional then keyword, each checked.
class BoundArgs {
 public:
  // `what` names the callee in errors ("filter 'join'"). Positionals past `params` go to rest() when
  // `allow_rest`, otherwise they are an error, as are unknown keywords and missing required ones.
  BoundArgs(const std::string& what, CallArgs& args, std::initializer_list<const char*> params, size_t required = 0,
            bool allow_rest = false);
  // The argument at index i of the signature, or `fallback` when it was not given.
  const Value& get(size_t i, const Value& fallback) const;
  bool given(size_t i) const;
  const std::vector<Value>& rest() const { return rest_; }  // extra positionals, where allowed

 private:
  std::vector<Value> values_;
  std::vector<bool> given_;
  std::vector<Value> rest_;
};

// json.dumps's options, as transformers' tojson filter passes them.
struct JsonStyle {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // None: one line
  std::string item_separator = ", ", key_separator = ": ";
  bool sort_keys = false;
};
// Python's json.dumps; a TypeError for what JSON cannot hold (Undefined, functions, namespaces).
std::string to_json(const Value& v, const JsonStyle& style);

// Python's printf-style `format % args`.
std::string percent_format(const std::string& format, const Value& args);

}  // namespace strata::chat
