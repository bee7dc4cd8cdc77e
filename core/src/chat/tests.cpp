// jinja2's built-in tests (`x is defined`, `x is divisibleby 3`...), with Python's type checks: a bool is a
// number but not an integer, Undefined is iterable, a dict is a sequence.
#include <cmath>
#include <map>

#include "builtins.hpp"
#include "interpreter.hpp"
#include "operators.hpp"
#include "text.hpp"

namespace strata::chat {
namespace {

std::string test_name(const char* name) { return std::string("test '") + name + "'"; }

#define STRATA_SIMPLE_TEST(fn, name, expr)                 \
  bool fn(Interpreter&, [[maybe_unused]] const Value& v, CallArgs& a) { \
    BoundArgs(test_name(name), a, {});                     \
    return (expr);                                          \
  }

STRATA_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
STRATA_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
STRATA_SIMPLE_TEST(t_none, "none", v.is_none())
STRATA_SIMPLE_TEST(t_boolean, "boolean", v.kind == Value::Kind::Bool)
STRATA_SIMPLE_TEST(t_true, "true", v.kind == Value::Kind::Bool && v.boolean)
STRATA_SIMPLE_TEST(t_false, "false", v.kind == Value::Kind::Bool && !v.boolean)
STRATA_SIMPLE_TEST(t_integer, "integer", v.kind == Value::Kind::Int)
STRATA_SIMPLE_TEST(t_float, "float", v.kind == Value::Kind::Float)
STRATA_SIMPLE_TEST(t_number, "number", v.is_number())
STRATA_SIMPLE_TEST(t_string, "string", v.is_string())
STRATA_SIMPLE_TEST(t_mapping, "mapping", v.is_dict() && !v.dict->is_namespace)
STRATA_SIMPLE_TEST(t_iterable, "iterable",
                   v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace))
STRATA_SIMPLE_TEST(t_sequence, "sequence",
                   v.is_undefined() || v.is_string() || (v.is_list() && !v.list->generator) ||
                       (v.is_dict() && !v.dict->is_namespace))
// Undefined defines __call__ (to raise), so Python's callable() says yes.
STRATA_SIMPLE_TEST(t_callable, "callable", v.is_callable() || v.is_undefined())
STRATA_SIMPLE_TEST(t_escaped, "escaped", false)

#undef STRATA_SIMPLE_TEST

int64_t integer_of(const Value& v, const char* test) {
  if (v.kind == Value::Kind::Int) return v.integer;
  if (v.kind == Value::Kind::Bool) return v.boolean;
  if (v.is_undefined()) fail_undefined(v);
  fail(std::string("TypeError: test '") + test + "' needs an integer, not '" + type_name(v) + "'");
}

bool t_odd(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("odd"), a, {});
  if (v.kind == Value::Kind::Float) return std::fmod(v.number, 2.0) != 0;
  return integer_of(v, "odd") % 2 != 0;
}

bool t_even(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("even"), a, {});
  if (v.kind == Value::Kind::Float) return std::fmod(v.number, 2.0) == 0;
  return integer_of(v, "even") % 2 == 0;
}

bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("divisibleby"), a, {"num"}, 1);
  const Value r = binary_operator("%", v, b.get(0, kNone));
  return equals(r, Value::from(0));
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("eq"), a, {"other"}, 1);
  return equals(v, b.get(0, kNone));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("ne"), a, {"other"}, 1);
  return !equals(v, b.get(0, kNone));
}
bool t_lt(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("lt"), a, {"other"}, 1);
  return compare(v, b.get(0, kNone)) < 0;
}
bool t_le(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("le"), a, {"other"}, 1);
  return compare(v, b.get(0, kNone)) <= 0;
}
bool t_gt(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("gt"), a, {"other"}, 1);
  return compare(v, b.get(0, kNone)) > 0;
}
bool t_ge(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("ge"), a, {"other"}, 1);
  return compare(v, b.get(0, kNone)) >= 0;
}

bool t_in(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("in"), a, {"seq"}, 1);
  return contains(b.get(0, kNone), v);
}

// Python's `is`: the same object. Scalars compare by value, as CPython's cached small values do.
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(test_name("sameas"), a, {"other"}, 1);
  const Value& o = b.get(0, kNone);
  if (v.kind != o.kind) return false;
  switch (v.kind) {
    case Value::Kind::List: return v.list == o.list;
    case Value::Kind::Dict: return v.dict == o.dict;
    case Value::Kind::Function: return v.function == o.function;
    default: return equals(v, o);
  }
}

// Python's str.islower()/isupper(): at least one cased character, and none of the other case.
bool has_cased(const std::string& s, bool upper) {
  bool any = false;
  for (const char32_t c : utf8_decode(s)) {
    if (upper ? py_is_lower_char(c) : py_is_upper_char(c)) return false;
    any = any || py_is_cased(c);
  }
  return any;
}

bool t_lower(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("lower"), a, {});
  return has_cased(to_str(v), false);
}
bool t_upper(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("upper"), a, {});
  return has_cased(to_str(v), true);
}

bool t_filter(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("filter"), a, {});
  return v.is_string() && find_filter(v.text) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(test_name("test"), a, {});
  return v.is_string() && find_test(v.text) != nullptr;
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> table = {
      {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined},     {"divisibleby", t_divisibleby},
      {"eq", t_eq},           {"equalto", t_eq},        {"==", t_eq},               {"escaped", t_escaped},
      {"even", t_even},       {"false", t_false},       {"filter", t_filter},       {"float", t_float},
      {"ge", t_ge},           {">=", t_ge},             {"gt", t_gt},               {"greaterthan", t_gt},
      {">", t_gt},            {"in", t_in},             {"integer", t_integer},     {"iterable", t_iterable},
      {"le", t_le},           {"<=", t_le},             {"lower", t_lower},         {"lt", t_lt},
      {"lessthan", t_lt},     {"<", t_lt},              {"mapping", t_mapping},     {"ne", t_ne},
      {"!=", t_ne},           {"none", t_none},         {"number", t_number},       {"odd", t_odd},
      {"sameas", t_sameas},   {"sequence", t_sequence}, {"string", t_string},       {"test", t_test},
      {"true", t_true},       {"undefined", t_undefined}, {"upper", t_upper},
  };
  return table;
}

}  // namespace

TestFn find_test(std::string_view name) {
  const auto& t = tests();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

}  // namespace strata::chat
