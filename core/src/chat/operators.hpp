// Python's arithmetic on template values: + - * / // % ** and unary minus, with Python's result types.
#pragma once

#include <string>

#include "value.hpp"

namespace strata::chat {

Value binary_operator(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& v);

// Python slicing a[start:stop:step] of a list, tuple or str; a None bound is omitted.
Value slice(const Value& v, const Value& start, const Value& stop, const Value& step);

}  // namespace strata::chat
