// The values a chat template computes with, modelled on the Python objects jinja2 hands around: None, bool,
// int, float, str (UTF-8, indexed by code point), list/tuple, dict (insertion-ordered), callables, and jinja2's
// Undefined. Printing and comparing follow Python (str(), repr(), ==, <).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::chat {

struct Value;

// Thrown while evaluating; the interpreter adds the line of the expression it was evaluating.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& message);

struct ListData {
  std::vector<Value> items;
  bool tuple = false;
  // A Python generator (select, map, reverse...): always true, without len(), printed as "<generator object>".
  bool generator = false;
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;
  bool is_namespace = false;  // namespace(): attributes set by {% set ns.x = ... %}
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

struct Value {
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Function };
  Kind kind = Kind::Undefined;
  bool boolean = false;
  bool unsafe = false;  // an Undefined standing for an attribute the sandbox refuses (list.append)
  int64_t integer = 0;
  double number = 0;
  std::string text;  // String; for Undefined, why it is undefined ("'x' is undefined")
  std::shared_ptr<ListData> list;
  std::shared_ptr<DictData> dict;
  std::shared_ptr<Callable> function;

  static Value undefined(std::string why);
  static Value none();
  static Value from(bool b);
  static Value from(int64_t i);
  static Value from(int i) { return from(static_cast<int64_t>(i)); }
  static Value from(double d);
  static Value from(std::string s);
  static Value from(const char* s) { return from(std::string(s)); }
  static Value from_list(std::vector<Value> items, bool tuple = false);
  static Value generator(std::vector<Value> items);
  static Value new_dict();
  static Value from_function(std::string name, std::function<Value(CallArgs&)> call);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  // An int as Python sees one: bool is a subclass of int (True + 1 == 2, "ab" * True == "ab").
  bool is_int_like() const { return kind == Kind::Int || kind == Kind::Bool; }
  bool is_list() const { return kind == Kind::List; }
  bool is_dict() const { return kind == Kind::Dict; }
  bool is_callable() const { return kind == Kind::Function; }
  double as_double() const;  // of a number (bool counts, as in Python)
};

// The lists and dicts made while it lives on this thread, emptied when it ends: a template can make reference
// cycles (`{% set ns.me = ns %}`), which shared ownership alone would never free. Values must not outlive it.
class ContainerArena {
 public:
  ContainerArena();
  ~ContainerArena();
  ContainerArena(const ContainerArena&) = delete;
  ContainerArena& operator=(const ContainerArena&) = delete;

  static void track(const std::shared_ptr<ListData>& list);
  static void track(const std::shared_ptr<DictData>& dict);

 private:
  void compact();
  std::vector<std::weak_ptr<ListData>> lists_;
  std::vector<std::weak_ptr<DictData>> dicts_;
  size_t compact_at_ = 4096;
  ContainerArena* outer_;
};

// Python's type name of a value ('str', 'int', 'list', 'dict', 'NoneType', 'tuple', 'bool', 'float').
std::string type_name(const Value& v);
// An Undefined used where Python would fail: raises its UndefinedError (or SecurityError).
[[noreturn]] void fail_undefined(const Value& v);

bool truthy(const Value& v);
std::string to_str(const Value& v);  // Python str()
std::string repr(const Value& v);    // Python repr()
std::string format_float(double d);  // Python repr() of a float: "1.0", "0.1", "1e+20", "inf"
bool equals(const Value& a, const Value& b);
// <0, 0, >0 as Python orders a and b; a TypeError where Python has no order for them.
int compare(const Value& a, const Value& b);
// Python's len(): strings count code points; raises for values without a length.
int64_t length(const Value& v);
// The items a for loop visits: list items, dict keys, a string's characters; Undefined gives none.
std::vector<Value> iterate(const Value& v);
bool contains(const Value& container, const Value& item);  // Python's `item in container`

// Decimal digits as an int64, nullopt past its range (Python would make a big int).
std::optional<int64_t> parse_decimal(std::string_view digits);
// A size a template asks for (a width, a repeat count, a batch), refused with a MemoryError past 256 MiB, where
// Python would start allocating gigabytes.
size_t checked_size(int64_t n);

// UTF-8 by code point, as Python indexes str.
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);
void utf8_append(std::string& out, char32_t c);

}  // namespace strata::chat
