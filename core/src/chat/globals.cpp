// The functions a template can call by name: jinja2's range, dict, namespace, cycler and joiner, and
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "builtins.hpp"

namespace strata::chat {
namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2's sandbox refuses longer ranges

Value g_range(CallArgs& a) {
  if (!a.keyword.empty()) fail("TypeError: range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : a.positional) {
    if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool) {
      fail("TypeError: '" + type_name(v) + "' object cannot be interpreted as an integer");
    }
    n.push_back(v.kind == Value::Kind::Bool ? v.boolean : v.integer);
  }
  int64_t start = 0, stop = 0, step = 1;
  if (n.size() == 1) {
    stop = n[0];
  } else if (n.size() == 2 || n.size() == 3) {
    start = n[0];
    stop = n[1];
    if (n.size() == 3) step = n[2];
  } else {
    fail("TypeError: range expected 1 to 3 arguments, got " + std::to_string(n.size()));
  }
  if (step == 0) fail("ValueError: range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) {
      fail("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    out.push_back(Value::from(i));
  }
  return Value::from_list(std::move(out));
}

// dict(mapping_or_pairs, **kwargs), which namespace() takes too.
Value make_dict(CallArgs& a, const char* name) {
  Value d = Value::new_dict();
  if (a.positional.size() > 1) fail(std::string("TypeError: ") + name + " expected at most 1 argument");
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      d.dict->items = src.dict->items;
    } else {
      for (const Value& pair : iterate(src)) {
        const std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) fail("ValueError: dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        d.dict->set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.keyword) d.dict->set(Value::from(k), v);
  return d;
}

Value g_namespace(CallArgs& a) {
  Value ns = make_dict(a, "namespace");
  ns.dict->is_namespace = true;
  return ns;
}

Value g_cycler(CallArgs& a) {
  if (a.positional.empty()) fail("TypeError: cycler needs at least one item");
  Value c = Value::new_dict();
  c.dict->is_namespace = true;  // attributes only, like jinja2's Cycler object
  DictData* self = c.dict.get();
  auto items = std::make_shared<std::vector<Value>>(a.positional);
  auto pos = std::make_shared<size_t>(0);
  self->set(Value::from("current"), (*items)[0]);
  self->set(Value::from("next"), Value::from_function("cycler.next", [self, items, pos](CallArgs&) {
              Value v = (*items)[*pos];
              *pos = (*pos + 1) % items->size();
              self->set(Value::from("current"), (*items)[*pos]);
              return v;
            }));
  self->set(Value::from("reset"), Value::from_function("cycler.reset", [self, items, pos](CallArgs&) {
              *pos = 0;
              self->set(Value::from("current"), (*items)[0]);
              return Value::none();
            }));
  return c;
}

Value g_joiner(CallArgs& a) {
  BoundArgs b("joiner()", a, {"sep"});
  const std::string sep = to_str(b.get(0, Value::from(", ")));
  auto used = std::make_shared<bool>(false);
  return Value::from_function("joiner", [sep, used](CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::from("");
    }
    return Value::from(sep);
  });
}

Value g_raise_exception(CallArgs& a) {
  BoundArgs b("raise_exception()", a, {"message"}, 1);
  fail("raise_exception: " + to_str(b.get(0, kNone)));
}

std::string strftime_local(const std::string& format, std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  localtime_r(&t, &tm);
  if (format.empty()) return "";
  // strftime gives 0 both for "too small" and for an empty result: grow until it fits or is clearly empty.
  for (size_t size = 256; size <= (1u << 20); size *= 4) {
    std::string buf(size, '\0');
    // The format is the template's, by design (Python hands it to the C library's strftime too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
#pragma GCC diagnostic pop
    if (n > 0) return buf.substr(0, n);
  }
  return "";
}

}  // namespace

Value find_global(std::string_view name, const std::chrono::system_clock::time_point* now) {
  if (name == "range") return Value::from_function("range", g_range);
  if (name == "dict") return Value::from_function("dict", [](CallArgs& a) { return make_dict(a, "dict"); });
  if (name == "namespace") return Value::from_function("namespace", g_namespace);
  if (name == "cycler") return Value::from_function("cycler", g_cycler);
  if (name == "joiner") return Value::from_function("joiner", g_joiner);
  if (name == "raise_exception") return Value::from_function("raise_exception", g_raise_exception);
  if (name == "strftime_now") {
    const std::optional<std::chrono::system_clock::time_point> fixed =
        now ? std::optional<std::chrono::system_clock::time_point>(*now) : std::nullopt;
    return Value::from_function("strftime_now", [fixed](CallArgs& a) {
      BoundArgs b("strftime_now()", a, {"format"}, 1);
      return Value::from(strftime_local(to_str(b.get(0, Value::none())), fixed.value_or(std::chrono::system_clock::now())));
    });
  }
  return Value::undefined("");
}

}  // namespace strata::chat
