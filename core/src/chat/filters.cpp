// jinja2's built-in filters (those that make sense for prompts), and transformers' tojson. Each follows the
// jinja2 function of the same name: its defaults, its case-insensitive sorting, its generators.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "builtins.hpp"
#include "interpreter.hpp"
#include "operators.hpp"
#include "text.hpp"

namespace strata::chat {
namespace {

const Value kFalse = Value::from(false);

std::string filter_name(const char* name) { return std::string("filter '") + name + "'"; }

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0; an int looks up that item.
Value attribute_of(Interpreter& in, const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return in.get_item(item, attribute);
  Value v = item;
  size_t start = 0;
  const std::string& path = attribute.text;
  for (;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const std::optional<int64_t> index = parse_decimal(part);
    v = in.get_item(v, index ? Value::from(*index) : Value::from(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The sort key of jinja2's sort/unique/min/max/dictsort: strings lowercased unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::from(py_lower(v.text));
  return v;
}

std::vector<Value> keys_of(Interpreter& in, const std::vector<Value>& items, const Value& attribute, bool case_sensitive) {
  std::vector<Value> keys;
  for (const Value& item : items) {
    if (attribute.is_none() || attribute.is_undefined()) {
      keys.push_back(sort_key(item, case_sensitive));
    } else if (attribute.is_string() && attribute.text.find(',') != std::string::npos) {
      std::vector<Value> parts;
      const std::string& rest = attribute.text;
      size_t start = 0;
      for (;;) {
        const size_t comma = rest.find(',', start);
        const std::string name = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        parts.push_back(sort_key(attribute_of(in, item, Value::from(name)), case_sensitive));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      keys.push_back(Value::from_list(std::move(parts)));
    } else {
      keys.push_back(sort_key(attribute_of(in, item, attribute), case_sensitive));
    }
  }
  return keys;
}

Value f_abs(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("abs"), a, {});
  if (v.kind == Value::Kind::Float) return Value::from(std::fabs(v.number));
  if (v.is_number()) {
    const int64_t n = v.kind == Value::Kind::Bool ? v.boolean : v.integer;
    return Value::from(n < 0 ? -n : n);
  }
  if (v.is_undefined()) fail_undefined(v);
  fail("TypeError: bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("attr"), a, {"name"}, 1);
  const std::string name = to_str(b.get(0, kNone));
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_dict() && v.dict->is_namespace) {
    if (const Value* found = v.dict->find(name)) return *found;
  } else {
    bool found = false;
    Value m = find_method(v, name, &found);
    if (found) return m;
  }
  return Value::undefined("'" + type_name(v) + " object' has no attribute '" + name + "'");
}

Value f_batch(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("batch"), a, {"linecount", "fill_with"}, 1);
  const Value& count = b.get(0, kNone);
  if (count.kind != Value::Kind::Int || count.integer <= 0) fail("ValueError: batch needs a positive integer linecount");
  const size_t n = checked_size(count.integer);
  std::vector<Value> out, tmp;
  for (Value& item : iterate(v)) {
    if (tmp.size() == n) {
      out.push_back(Value::from_list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(std::move(item));
  }
  if (!tmp.empty()) {
    if (b.given(1) && !b.get(1, kNone).is_none()) {
      while (tmp.size() < n) tmp.push_back(b.get(1, kNone));
    }
    out.push_back(Value::from_list(std::move(tmp)));
  }
  return Value::generator(std::move(out));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("capitalize"), a, {});
  return Value::from(py_capitalize(to_str(v)));
}

Value f_center(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("center"), a, {"width"});
  const Value w = b.get(0, Value::from(80));
  if (w.kind != Value::Kind::Int) fail("TypeError: center width must be an integer");
  const std::string s = to_str(v);
  const auto len = static_cast<int64_t>(utf8_decode(s).size());
  if (w.integer <= len) return Value::from(s);
  const int64_t marg = static_cast<int64_t>(checked_size(w.integer - len));
  const int64_t left = marg / 2 + (marg & w.integer & 1);  // CPython's str.center
  return Value::from(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

Value f_default(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("default"), a, {"default_value", "boolean"});
  const bool boolean = truthy(b.get(1, kFalse));
  if (v.is_undefined() || (boolean && !truthy(v))) return b.get(0, Value::from(""));
  return v;
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("dictsort"), a, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict() || v.dict->is_namespace) fail("FilterArgumentError: dictsort needs a mapping");
  const bool cs = truthy(b.get(0, kFalse));
  const std::string by = to_str(b.get(1, Value::from("key")));
  if (by != "key" && by != "value") fail("FilterArgumentError: You can only sort by either \"key\" or \"value\"");
  const size_t pos = by == "key" ? 0 : 1;
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict->items) items.push_back(Value::from_list({k, val}, true));
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return compare(sort_key(x.list->items[pos], cs), sort_key(y.list->items[pos], cs)) < 0;
  });
  if (truthy(b.get(2, kFalse))) std::reverse(items.begin(), items.end());
  return Value::from_list(std::move(items));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("escape"), a, {});
  return Value::from(html_escape(to_str(v)));
}

Value f_first(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("first"), a, {});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("last"), a, {});
  if (v.is_list() && v.list->generator) fail("TypeError: 'generator' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python's float() of a str: surrounding whitespace, underscores between digits, inf/nan.
bool parse_float(const std::string& text, double* out) {
  const std::string s = py_strip(text, nullptr, true, true);
  if (s.empty()) return false;
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        return false;
      }
      continue;
    }
    clean += s[i];
  }
  const std::string lower = py_lower(clean);
  const std::string body = !lower.empty() && (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double inf = std::numeric_limits<double>::infinity();
    *out = body == "nan" ? std::numeric_limits<double>::quiet_NaN() : (lower[0] == '-' ? -inf : inf);
    return true;
  }
  if (body.empty() || !(std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.')) return false;
  if (body.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

bool parse_int(const std::string& text, int base, int64_t* out) {
  std::string s = py_strip(text, nullptr, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.erase(0, 1);
  }
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.erase(0, 2);
  if (base == 8 && s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) s.erase(0, 2);
  if (base == 2 && s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) s.erase(0, 2);
  if (s.empty() || s.front() == '_' || s.back() == '_') return false;
  int64_t n = 0;
  for (const char c : s) {
    if (c == '_') continue;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99;
    if (d >= base) return false;
    if (__builtin_mul_overflow(n, base, &n) || __builtin_add_overflow(n, d, &n)) return false;
  }
  *out = neg ? -n : n;
  return true;
}

Value f_float(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("float"), a, {"default"});
  if (v.is_number()) return Value::from(v.as_double());
  double d;
  if (v.is_string() && parse_float(v.text, &d)) return Value::from(d);
  return b.get(0, Value::from(0.0));
}

Value f_int(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("int"), a, {"default", "base"});
  const Value base = b.get(1, Value::from(10));
  if (v.kind == Value::Kind::Int) return v;
  if (v.kind == Value::Kind::Bool) return Value::from(static_cast<int64_t>(v.boolean));
  if (v.kind == Value::Kind::Float) {
    if (std::isnan(v.number) || std::isinf(v.number)) fail("OverflowError: cannot convert float to integer");
    return Value::from(static_cast<int64_t>(v.number));
  }
  if (v.is_string()) {
    int64_t n;
    if (parse_int(v.text, static_cast<int>(base.integer), &n)) return Value::from(n);
    double d;
    if (parse_float(v.text, &d) && std::isfinite(d)) return Value::from(static_cast<int64_t>(d));
  }
  return b.get(0, Value::from(0));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("indent"), a, {"width", "first", "blank"});
  // A copy: get() returns the fallback itself when the argument is absent, and that temporary dies here.
  const Value width = b.get(0, Value::from(4));
  const std::string indention = width.is_string() ? width.text : std::string(checked_size(width.integer), ' ');
  const std::string s = to_str(v) + "\n";  // as jinja2 does, so that splitlines keeps a trailing empty line
  std::vector<std::string> lines = py_splitlines(s, false);
  std::string rv;
  if (truthy(b.get(2, kFalse))) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
    }
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
  }
  if (truthy(b.get(1, kFalse))) rv = indention + rv;
  return Value::from(std::move(rv));
}

Value f_items(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("items"), a, {});
  if (v.is_undefined()) return Value::generator({});
  if (!v.is_dict() || v.dict->is_namespace) fail("TypeError: Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict->items) out.push_back(Value::from_list({k, val}, true));
  return Value::generator(std::move(out));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("join"), a, {"d", "attribute"});
  const std::string sep = to_str(b.get(0, Value::from("")));
  const Value& attribute = b.get(1, kNone);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attribute.is_none() ? item : attribute_of(in, item, attribute));
  }
  return Value::from(std::move(out));
}

Value f_length(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("length"), a, {});
  return Value::from(length(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("list"), a, {});
  return Value::from_list(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("lower"), a, {});
  return Value::from(py_lower(to_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("upper"), a, {});
  return Value::from(py_upper(to_str(v)));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& a) {
  std::vector<Value> items = iterate(v);
  std::vector<Value> out;
  if (a.positional.empty()) {
    BoundArgs b(filter_name("map"), a, {"attribute", "default"});
    if (!b.given(0)) fail("FilterArgumentError: map requires a filter argument");
    for (const Value& item : items) {
      Value x = attribute_of(in, item, b.get(0, kNone));
      if (x.is_undefined() && b.given(1)) x = b.get(1, kNone);
      out.push_back(std::move(x));
    }
    return Value::generator(std::move(out));
  }
  const std::string name = to_str(a.positional[0]);
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const Value& item : items) {
    CallArgs args = rest;
    out.push_back(in.apply_filter(name, item, args));
  }
  return Value::generator(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& a, bool want_max, const char* name) {
  BoundArgs b(filter_name(name), a, {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const std::vector<Value> keys = keys_of(in, items, b.get(1, kNone), truthy(b.get(0, kFalse)));
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int c = compare(keys[i], keys[best]);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true, "max"); }
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false, "min"); }

// select/reject(test, args...) and selectattr/rejectattr(attribute, test, args...).
Value select_or_reject(Interpreter& in, const Value& v, CallArgs& a, bool by_attribute, bool keep) {
  size_t at = 0;
  Value attribute;
  if (by_attribute) {
    if (a.positional.empty()) fail("TypeError: selectattr/rejectattr need an attribute name");
    attribute = a.positional[at++];
  }
  std::string test;
  CallArgs test_args;
  const bool has_test = a.positional.size() > at;
  if (has_test) {
    test = to_str(a.positional[at++]);
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(at), a.positional.end());
    test_args.keyword = a.keyword;
  }
  std::vector<Value> out;
  for (Value& item : iterate(v)) {
    const Value subject = by_attribute ? attribute_of(in, item, attribute) : item;
    bool ok;
    if (has_test) {
      CallArgs args = test_args;
      ok = in.apply_test(test, subject, args);
    } else {
      ok = truthy(subject);
    }
    if (ok == keep) out.push_back(std::move(item));
  }
  return Value::generator(std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_or_reject(in, v, a, true, false); }

Value f_replace(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("replace"), a, {"old", "new", "count"}, 2);
  const Value& count = b.get(2, kNone);
  return Value::from(py_replace(to_str(v), to_str(b.get(0, kNone)), to_str(b.get(1, kNone)),
                                count.is_none() ? -1 : count.integer));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("reverse"), a, {});
  if (v.is_string()) {
    std::u32string u = utf8_decode(v.text);
    std::reverse(u.begin(), u.end());
    return Value::from(utf8_encode(u));
  }
  if (v.is_list() && v.list->generator) {
    std::vector<Value> items = v.list->items;
    std::reverse(items.begin(), items.end());
    return Value::from_list(std::move(items));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::generator(std::move(items));
}

Value f_round(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("round"), a, {"precision", "method"});
  const int64_t precision = b.get(0, Value::from(0)).integer;
  const std::string method = to_str(b.get(1, Value::from("common")));
  if (!v.is_number()) {
    if (v.is_undefined()) fail_undefined(v);
    fail("TypeError: type " + type_name(v) + " doesn't define __round__ method");
  }
  const double d = v.as_double();
  if (method == "common") {
    // Python's round(x, n): correctly rounded, ties to even on the exact binary value (as printf rounds).
    char buf[1024];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), d);
    double r = std::strtod(buf, nullptr);
    if (precision < 0) {
      const double p = std::pow(10.0, static_cast<double>(-precision));
      r = std::nearbyint(d / p) * p;
    }
    return Value::from(r);
  }
  if (method != "ceil" && method != "floor") fail("FilterArgumentError: method must be common, ceil or floor");
  const double p = std::pow(10.0, static_cast<double>(precision));
  return Value::from((method == "ceil" ? std::ceil(d * p) : std::floor(d * p)) / p);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("safe"), a, {});
  return v.is_string() ? v : Value::from(to_str(v));
}

Value f_slice(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("slice"), a, {"slices", "fill_with"}, 1);
  const std::vector<Value> seq = iterate(v);
  const int64_t slices = b.get(0, kNone).integer;
  if (slices <= 0) fail("ValueError: slice needs a positive number of slices");
  const auto length_ = static_cast<int64_t>(seq.size());
  const int64_t per = length_ / slices, with_extra = length_ % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t n = 0; n < slices; ++n) {
    const int64_t start = offset + n * per;
    if (n < with_extra) ++offset;
    const int64_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (b.given(1) && !b.get(1, kNone).is_none() && n >= with_extra) tmp.push_back(b.get(1, kNone));
    out.push_back(Value::from_list(std::move(tmp)));
  }
  return Value::generator(std::move(out));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("sort"), a, {"reverse", "case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  const std::vector<Value> keys = keys_of(in, items, b.get(2, kNone), truthy(b.get(1, kFalse)));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const bool reverse = truthy(b.get(0, kFalse));
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return reverse ? compare(keys[y], keys[x]) < 0 : compare(keys[x], keys[y]) < 0;
  });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(items[i]);
  return Value::from_list(std::move(out));
}

Value f_string(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("string"), a, {});
  return v.is_string() ? v : Value::from(to_str(v));
}

Value f_striptags(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("striptags"), a, {});
  const std::string s = to_str(v);
  std::string text;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      const size_t e = s.find("-->", i + 4);
      if (e != std::string::npos) {
        i = e + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      const size_t e = s.find('>', i + 1);
      if (e != std::string::npos) {
        i = e + 1;
        continue;
      }
    }
    text += s[i++];
  }
  static const std::pair<const char*, const char*> kEntities[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&nbsp;", "\xc2\xa0"}};
  for (const auto& [entity, ch] : kEntities) text = py_replace(text, entity, ch, -1);
  std::string out;
  for (const std::string& w : py_split(text, nullptr, -1, false)) out += (out.empty() ? "" : " ") + w;
  return Value::from(std::move(out));
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("sum"), a, {"attribute", "start"});
  Value total = b.get(1, Value::from(0));
  const Value& attribute = b.get(0, kNone);
  for (const Value& item : iterate(v)) {
    total = binary_operator("+", total, attribute.is_none() ? item : attribute_of(in, item, attribute));
  }
  return total;
}

Value f_title(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("title"), a, {});
  // jinja2 capitalizes each word that follows whitespace or one of - ( { [ <, lowering the rest.
  std::string out;
  bool word_start = true;
  for (const char32_t c : utf8_decode(to_str(v))) {
    std::string ch;
    utf8_append(ch, c);
    const bool sep = py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += ch;
    } else {
      out += word_start ? py_upper(ch) : py_lower(ch);
    }
    word_start = sep;
  }
  return Value::from(std::move(out));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("tojson"), a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonStyle st;
  st.ensure_ascii = truthy(b.get(0, kFalse));
  const Value& indent = b.get(1, kNone);
  if (indent.is_string()) {
    st.indent = indent.text;
  } else if (indent.is_number()) {
    st.indent = std::string(checked_size(indent.kind == Value::Kind::Bool ? indent.boolean : indent.integer), ' ');
  } else if (!indent.is_none()) {
    fail("TypeError: tojson indent must be an int or a str");
  }
  if (st.indent) st.item_separator = ",";
  const Value& separators = b.get(2, kNone);
  if (!separators.is_none()) {
    const std::vector<Value> parts = iterate(separators);
    if (parts.size() != 2) fail("ValueError: tojson separators must be (item_separator, key_separator)");
    st.item_separator = to_str(parts[0]);
    st.key_separator = to_str(parts[1]);
  }
  st.sort_keys = truthy(b.get(3, kFalse));
  return Value::from(to_json(v, st));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("trim"), a, {"chars"});
  const Value& chars = b.get(0, kNone);
  const std::string set = chars.is_none() ? std::string() : to_str(chars);
  return Value::from(py_strip(to_str(v), chars.is_none() ? nullptr : &set, true, true));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("truncate"), a, {"length", "killwords", "end", "leeway"});
  const std::u32string s = utf8_decode(to_str(v));
  const int64_t len = b.get(0, Value::from(255)).integer;
  const std::u32string end = utf8_decode(to_str(b.get(2, Value::from("..."))));
  const int64_t leeway = b.get(3, Value::from(5)).integer;
  if (len < static_cast<int64_t>(end.size())) fail("AssertionError: expected length >= len(end)");
  if (static_cast<int64_t>(s.size()) <= len + leeway) return v.is_string() ? v : Value::from(to_str(v));
  std::u32string head = s.substr(0, static_cast<size_t>(len) - end.size());
  if (!truthy(b.get(1, kFalse))) {
    const size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head.resize(sp);
  }
  return Value::from(utf8_encode(head + end));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  BoundArgs b(filter_name("unique"), a, {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(v);
  const std::vector<Value> keys = keys_of(in, items, b.get(1, kNone), truthy(b.get(0, kFalse)));
  std::vector<Value> out, seen;
  for (size_t i = 0; i < items.size(); ++i) {
    bool dup = false;
    for (const Value& s : seen) dup = dup || equals(s, keys[i]);
    if (dup) continue;
    seen.push_back(keys[i]);
    out.push_back(items[i]);
  }
  return Value::generator(std::move(out));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& a) {
  BoundArgs(filter_name("wordcount"), a, {});
  int64_t n = 0;
  bool in_word = false;
  for (const char32_t c : utf8_decode(to_str(v))) {
    const bool word = py_isalnum(c) || c == '_';  // Python's \w
    if (word && !in_word) ++n;
    in_word = word;
  }
  return Value::from(n);
}

Value f_format(Interpreter&, const Value& v, CallArgs& a) {
  if (!a.positional.empty() && !a.keyword.empty()) {
    fail("FilterArgumentError: can't handle positional and keyword arguments at the same time");
  }
  if (!a.keyword.empty()) {
    Value d = Value::new_dict();
    for (const auto& [k, val] : a.keyword) d.dict->set(Value::from(k), val);
    return Value::from(percent_format(to_str(v), d));
  }
  return Value::from(percent_format(to_str(v), Value::from_list(a.positional, true)));
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> table = {
      {"abs", f_abs},           {"attr", f_attr},         {"batch", f_batch},         {"capitalize", f_capitalize},
      {"center", f_center},     {"count", f_length},      {"d", f_default},           {"default", f_default},
      {"dictsort", f_dictsort}, {"e", f_escape},          {"escape", f_escape},       {"forceescape", f_escape},
      {"first", f_first},       {"float", f_float},       {"format", f_format},       {"indent", f_indent},
      {"int", f_int},           {"items", f_items},       {"join", f_join},           {"last", f_last},
      {"length", f_length},     {"list", f_list},         {"lower", f_lower},         {"map", f_map},
      {"max", f_max},           {"min", f_min},           {"reject", f_reject},       {"rejectattr", f_rejectattr},
      {"replace", f_replace},   {"reverse", f_reverse},   {"round", f_round},         {"safe", f_safe},
      {"select", f_select},     {"selectattr", f_selectattr}, {"slice", f_slice},     {"sort", f_sort},
      {"string", f_string},     {"striptags", f_striptags}, {"sum", f_sum},           {"title", f_title},
      {"tojson", f_tojson},     {"trim", f_trim},         {"truncate", f_truncate},   {"unique", f_unique},
      {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& t = filters();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

}  // namespace strata::chat
