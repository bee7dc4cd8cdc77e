// Python methods templates call on values: str (strip, split, startswith, format...), dict (items, get...) and
// list (index, count, pop). The immutable sandbox that transformers uses refuses the methods that change a
// list or dict in place (append, update...): they come back as an unsafe Undefined that fails when called.
#include <algorithm>
#include <set>

#include "builtins.hpp"
#include "text.hpp"

namespace strata::chat {
namespace {

std::string method_name(const Value& self, const std::string& name) { return type_name(self) + "." + name + "()"; }

const std::string* optional_string(const Value& v, std::string& holder, const char* what) {
  if (v.is_none() || v.is_undefined()) return nullptr;
  if (!v.is_string()) fail(std::string("TypeError: ") + what + " arg must be None or str");
  holder = v.text;
  return &holder;
}

std::vector<Value> strings(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  for (const std::string& p : parts) out.push_back(Value::from(p));
  return out;
}

// startswith/endswith with a str or a tuple of str, and optional start/end in code points.
bool affix_match(const Value& self, CallArgs& args, bool prefix, const std::string& name) {
  BoundArgs b(method_name(self, name), args, {"affix", "start", "end"}, 1);
  std::u32string s = utf8_decode(self.text);
  const auto n = static_cast<int64_t>(s.size());
  auto clamp_index = [n](const Value& v, int64_t dflt) {
    if (v.is_none() || v.is_undefined()) return dflt;
    int64_t i = v.integer;
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  const int64_t lo = clamp_index(b.get(1, kNone), 0), hi = clamp_index(b.get(2, kNone), n);
  s = lo <= hi ? s.substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo)) : std::u32string();
  const Value& affix = b.get(0, kNone);
  std::vector<Value> options;
  if (affix.is_list() && affix.list->tuple) {
    options = affix.list->items;
  } else if (affix.is_string()) {
    options.push_back(affix);
  } else {
    fail("TypeError: " + name + " first arg must be str or a tuple of str, not " + type_name(affix));
  }
  for (const Value& o : options) {
    if (!o.is_string()) fail("TypeError: tuple for " + name + " must only contain str, not " + type_name(o));
    const std::u32string a = utf8_decode(o.text);
    if (a.size() > s.size()) continue;
    if (prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0) return true;
  }
  return false;
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  const std::u32string u = utf8_decode(s);
  return !u.empty() && std::all_of(u.begin(), u.end(), pred);
}

Value string_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.text;
  const std::string what = method_name(self, name);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs b(what, args, {"chars"});
    std::string holder;
    const std::string* chars = optional_string(b.get(0, kNone), holder, name.c_str());
    return Value::from(py_strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs b(what, args, {"sep", "maxsplit"});
    std::string holder;
    const std::string* sep = optional_string(b.get(0, kNone), holder, "sep");
    const int64_t maxsplit = b.get(1, Value::from(-1)).integer;
    return Value::from_list(strings(py_split(s, sep, maxsplit, name == "rsplit")));
  }
  if (name == "splitlines") {
    BoundArgs b(what, args, {"keepends"});
    return Value::from_list(strings(py_splitlines(s, truthy(b.get(0, Value::from(false))))));
  }
  if (name == "startswith" || name == "endswith") return Value::from(affix_match(self, args, name == "startswith", name));
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "casefold" ||
      name == "swapcase") {
    BoundArgs(what, args, {});
    if (name == "upper") return Value::from(py_upper(s));
    if (name == "lower" || name == "casefold") return Value::from(py_lower(s));
    if (name == "title") return Value::from(py_title(s));
    if (name == "capitalize") return Value::from(py_capitalize(s));
    std::string out = s;
    for (char& c : out) {
      if (c >= 'a' && c <= 'z') {
        c = static_cast<char>(c - 32);
      } else if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + 32);
      }
    }
    return Value::from(std::move(out));
  }
  if (name == "replace") {
    BoundArgs b(what, args, {"old", "new", "count"}, 2);
    if (!b.get(0, kNone).is_string() || !b.get(1, kNone).is_string()) fail("TypeError: replace() arguments must be str");
    return Value::from(py_replace(s, b.get(0, kNone).text, b.get(1, kNone).text, b.get(2, Value::from(-1)).integer));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    BoundArgs b(what, args, {"sub"}, 1);
    if (!b.get(0, kNone).is_string()) fail("TypeError: must be str, not " + type_name(b.get(0, kNone)));
    const int64_t at = py_find(s, b.get(0, kNone).text, name[0] == 'r');
    if (at < 0 && name.find("index") != std::string::npos) fail("ValueError: substring not found");
    return Value::from(at);
  }
  if (name == "count") {
    BoundArgs b(what, args, {"sub"}, 1);
    if (!b.get(0, kNone).is_string()) fail("TypeError: must be str, not " + type_name(b.get(0, kNone)));
    return Value::from(py_count(s, b.get(0, kNone).text));
  }
  if (name == "join") {
    BoundArgs b(what, args, {"iterable"}, 1);
    std::string out;
    bool first = true;
    for (const Value& item : iterate(b.get(0, kNone))) {
      if (!item.is_string()) fail("TypeError: sequence item: expected str instance, " + type_name(item) + " found");
      if (!first) out += s;
      first = false;
      out += item.text;
    }
    return Value::from(std::move(out));
  }
  if (name == "isdigit" || name == "isdecimal") {
    BoundArgs(what, args, {});
    return Value::from(all_chars(s, py_isdecimal));
  }
  if (name == "isnumeric") {
    BoundArgs(what, args, {});
    return Value::from(all_chars(s, py_isnumeric));
  }
  if (name == "isalpha") {
    BoundArgs(what, args, {});
    return Value::from(all_chars(s, py_isalpha));
  }
  if (name == "isalnum") {
    BoundArgs(what, args, {});
    return Value::from(all_chars(s, py_isalnum));
  }
  if (name == "isspace") {
    BoundArgs(what, args, {});
    return Value::from(all_chars(s, py_isspace));
  }
  if (name == "islower" || name == "isupper") {
    BoundArgs(what, args, {});
    bool any = false, ok = true;
    for (const char32_t c : utf8_decode(s)) {
      any = any || py_is_cased(c);
      if ((name == "islower" && py_is_upper_char(c)) || (name == "isupper" && py_is_lower_char(c))) ok = false;
    }
    return Value::from(any && ok);
  }
  if (name == "format") return Value::from(py_format(s, args));
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs b(what, args, {"width", "fillchar"}, 1);
    const int64_t width = b.get(0, kNone).integer;
    const std::string fill = b.given(1) ? to_str(b.get(1, kNone)) : " ";
    const auto len = static_cast<int64_t>(utf8_decode(s).size());
    if (width <= len) return self;
    const auto marg = static_cast<int64_t>(checked_size(width - len));
    const int64_t left = name == "ljust" ? 0 : name == "rjust" ? marg : marg / 2 + (marg & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = left; i < marg; ++i) out += fill;
    return Value::from(std::move(out));
  }
  if (name == "zfill") {
    BoundArgs b(what, args, {"width"}, 1);
    const auto len = static_cast<int64_t>(utf8_decode(s).size());
    const int64_t width = b.get(0, kNone).integer;
    if (width <= len) return self;
    const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
    return Value::from((sign ? s.substr(0, 1) : "") + std::string(checked_size(width - len), '0') + s.substr(sign ? 1 : 0));
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs b(what, args, {"sep"}, 1);
    const std::string sep = to_str(b.get(0, kNone));
    if (sep.empty()) fail("ValueError: empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (at == std::string::npos) {
      return name == "partition" ? Value::from_list({self, Value::from(""), Value::from("")}, true)
                                 : Value::from_list({Value::from(""), Value::from(""), self}, true);
    }
    return Value::from_list({Value::from(s.substr(0, at)), Value::from(sep), Value::from(s.substr(at + sep.size()))}, true);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs b(what, args, {"affix"}, 1);
    const std::string a = to_str(b.get(0, kNone));
    if (name == "removeprefix" && s.compare(0, a.size(), a) == 0) return Value::from(s.substr(a.size()));
    if (name == "removesuffix" && !a.empty() && s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0) {
      return Value::from(s.substr(0, s.size() - a.size()));
    }
    return self;
  }
  fail("AttributeError: 'str' object has no attribute '" + name + "'");
}

Value dict_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string what = method_name(self, name);
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs(what, args, {});
    std::vector<Value> out;
    for (const auto& [k, v] : self.dict->items) {
      out.push_back(name == "items" ? Value::from_list({k, v}, true) : name == "keys" ? k : v);
    }
    return Value::from_list(std::move(out));
  }
  if (name == "get") {
    BoundArgs b(what, args, {"key", "default"}, 1);
    if (const Value* v = self.dict->find(b.get(0, kNone))) return *v;
    return b.get(1, kNone);
  }
  if (name == "copy") {
    BoundArgs(what, args, {});
    Value d = Value::new_dict();
    d.dict->items = self.dict->items;
    return d;
  }
  fail("AttributeError: 'dict' object has no attribute '" + name + "'");
}

Value list_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string what = method_name(self, name);
  auto& items = self.list->items;
  if (name == "index") {
    BoundArgs b(what, args, {"value"}, 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (equals(items[i], b.get(0, kNone))) return Value::from(static_cast<int64_t>(i));
    }
    fail("ValueError: " + repr(b.get(0, kNone)) + " is not in list");
  }
  if (name == "count") {
    BoundArgs b(what, args, {"value"}, 1);
    return Value::from(static_cast<int64_t>(std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, b.get(0, kNone)); })));
  }
  if (name == "copy") {
    BoundArgs(what, args, {});
    return Value::from_list(items);
  }
  if (name == "pop") {
    // Not in the sandbox's list of mutating methods, so Python lets a template pop.
    BoundArgs b(what, args, {"index"});
    if (items.empty()) fail("IndexError: pop from empty list");
    int64_t i = b.get(0, Value::from(-1)).integer;
    const auto n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) fail("IndexError: pop index out of range");
    Value v = items[static_cast<size_t>(i)];
    items.erase(items.begin() + i);
    return v;
  }
  if (name == "clear") {
    BoundArgs(what, args, {});
    items.clear();
    return kNone;
  }
  fail("AttributeError: 'list' object has no attribute '" + name + "'");
}

const std::set<std::string, std::less<>> kStringMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "casefold", "swapcase", "replace", "find", "rfind", "index", "rindex", "count", "join",
    "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "islower", "isupper", "format", "center",
    "ljust", "rjust", "zfill", "partition", "rpartition", "removeprefix", "removesuffix"};
const std::set<std::string, std::less<>> kDictMethods = {"items", "keys", "values", "get", "copy"};
const std::set<std::string, std::less<>> kDictMutators = {"clear", "pop", "popitem", "setdefault", "update"};
const std::set<std::string, std::less<>> kListMethods = {"index", "count", "copy", "pop", "clear"};
const std::set<std::string, std::less<>> kListMutators = {"append", "reverse", "insert", "sort", "extend", "remove"};

Value unsafe(const Value& self, const std::string& name) {
  Value u = Value::undefined("access to attribute '" + name + "' of '" + type_name(self) + "' object is unsafe.");
  u.unsafe = true;
  return u;
}

}  // namespace

Value find_method(const Value& value, const std::string& name, bool* found) {
  *found = true;
  if (value.is_string() && kStringMethods.count(name) != 0) {
    return Value::from_function("str." + name, [value, name](CallArgs& a) { return string_method(value, name, a); });
  }
  if (value.is_dict() && !value.dict->is_namespace) {
    if (kDictMethods.count(name) != 0) {
      return Value::from_function("dict." + name, [value, name](CallArgs& a) { return dict_method(value, name, a); });
    }
    if (kDictMutators.count(name) != 0) return unsafe(value, name);
  }
  if (value.is_list() && !value.list->generator && !value.list->tuple) {
    if (kListMethods.count(name) != 0) {
      return Value::from_function("list." + name, [value, name](CallArgs& a) { return list_method(value, name, a); });
    }
    if (kListMutators.count(name) != 0) return unsafe(value, name);
  }
  if (value.is_list() && value.list->tuple && (name == "index" || name == "count")) {
    return Value::from_function("tuple." + name, [value, name](CallArgs& a) { return list_method(value, name, a); });
  }
  *found = false;
  return Value::undefined("");
}

}  // namespace strata::chat
