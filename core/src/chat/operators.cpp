// Arithmetic as Python does it: int op int stays int (floor division and modulo round toward minus infinity),
// `/` is always float, str and list concatenate and repeat, `%` on a str formats.
#include "operators.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "builtins.hpp"

namespace strata::chat {
namespace {

int64_t int_of(const Value& v) { return v.kind == Value::Kind::Bool ? (v.boolean ? 1 : 0) : v.integer; }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("TypeError: unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

constexpr size_t kMaxRepeatBytes = size_t{1} << 28;

Value repeat(const Value& seq, int64_t n) {
  const size_t unit = seq.is_string() ? seq.text.size() : seq.list->items.size() * sizeof(Value);
  if (n > 0 && unit > 0 && static_cast<uint64_t>(n) > kMaxRepeatBytes / unit) fail("MemoryError: repetition too large");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.text;
    return Value::from(std::move(out));
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list->items.begin(), seq.list->items.end());
  return Value::from_list(std::move(out), seq.list->tuple);
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

Value binary_operator(const std::string& op, const Value& a, const Value& b) {
  const bool ints = a.is_int_like() && b.is_int_like();
  const bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (!__builtin_add_overflow(int_of(a), int_of(b), &r)) return Value::from(r);
      return Value::from(a.as_double() + b.as_double());
    }
    if (nums) return Value::from(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value::from(a.text + b.text);
    if (a.is_list() && b.is_list() && a.list->tuple == b.list->tuple && !a.list->generator && !b.list->generator) {
      std::vector<Value> out = a.list->items;
      out.insert(out.end(), b.list->items.begin(), b.list->items.end());
      return Value::from_list(std::move(out), a.list->tuple);
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (!__builtin_sub_overflow(int_of(a), int_of(b), &r)) return Value::from(r);
      return Value::from(a.as_double() - b.as_double());
    }
    if (nums) return Value::from(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (!__builtin_mul_overflow(int_of(a), int_of(b), &r)) return Value::from(r);
      return Value::from(a.as_double() * b.as_double());
    }
    if (nums) return Value::from(a.as_double() * b.as_double());
    if ((a.is_string() || (a.is_list() && !a.list->generator)) && b.is_int_like()) return repeat(a, int_of(b));
    if ((b.is_string() || (b.is_list() && !b.list->generator)) && a.is_int_like()) return repeat(b, int_of(a));
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) fail("ZeroDivisionError: division by zero");
    return Value::from(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) fail("ZeroDivisionError: integer division or modulo by zero");
    if (ints) {
      const int64_t x = int_of(a), y = int_of(b);
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value::from(q);
    }
    return Value::from(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_string()) return Value::from(percent_format(a.text, b));
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) fail("ZeroDivisionError: integer division or modulo by zero");
    if (ints) {
      const int64_t x = int_of(a), y = int_of(b);
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::from(r);
    }
    return Value::from(py_fmod(a.as_double(), b.as_double()));
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && int_of(b) >= 0) {
      int64_t r = 1, base = int_of(a);
      bool overflow = false;
      for (int64_t e = int_of(b); e > 0 && !overflow; --e) overflow = __builtin_mul_overflow(r, base, &r);
      if (!overflow) return Value::from(r);
    }
    return Value::from(std::pow(a.as_double(), b.as_double()));
  }
  fail("unknown operator '" + op + "'");
}

Value negate(const Value& v) {
  if (v.is_int_like()) return Value::from(-int_of(v));
  if (v.kind == Value::Kind::Float) return Value::from(-v.number);
  if (v.is_undefined()) fail_undefined(v);
  fail("TypeError: bad operand type for unary -: '" + type_name(v) + "'");
}

Value slice(const Value& v, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto bound = [](const Value& b, const char* what) -> std::optional<int64_t> {
    if (b.is_none()) return std::nullopt;
    if (!b.is_int_like()) {
      fail(std::string("TypeError: slice ") + what + " must be integers or None or have an __index__ method");
    }
    return int_of(b);
  };
  const std::optional<int64_t> start = bound(start_v, "indices"), stop = bound(stop_v, "indices"),
                               step_opt = bound(step_v, "indices");
  const int64_t step = step_opt.value_or(1);
  if (step == 0) fail("ValueError: slice step cannot be zero");

  std::u32string chars;
  const std::vector<Value>* items = nullptr;
  int64_t n;
  if (v.is_string()) {
    chars = utf8_decode(v.text);
    n = static_cast<int64_t>(chars.size());
  } else if (v.is_list() && !v.list->generator) {
    items = &v.list->items;
    n = static_cast<int64_t>(items->size());
  } else {
    if (v.is_undefined()) fail_undefined(v);
    return Value::undefined("'" + type_name(v) + " object' is not subscriptable");
  }
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> x, int64_t dflt) {
    if (!x) return dflt;
    int64_t i = *x;
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t lo = clamp(start, step > 0 ? 0 : n - 1), hi = clamp(stop, step > 0 ? n : -1);
  std::vector<int64_t> picks;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) picks.push_back(i);
  if (items == nullptr) {
    std::u32string out;
    for (int64_t i : picks) out += chars[static_cast<size_t>(i)];
    return Value::from(utf8_encode(out));
  }
  std::vector<Value> out;
  for (int64_t i : picks) out.push_back((*items)[static_cast<size_t>(i)]);
  return Value::from_list(std::move(out), v.list->tuple);
}

}  // namespace strata::chat
