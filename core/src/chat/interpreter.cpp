// The tree-walking renderer. Every evaluation error is turned into a TemplateError carrying the line and column
// of the innermost expression that raised it.
#include "interpreter.hpp"

#include "builtins.hpp"
#include "operators.hpp"
#include "strata/chat_template.hpp"

namespace strata::chat {
namespace {

constexpr int kMaxCallDepth = 200;
// Far beyond any chat (a template loops over messages and tools), and it stops a runaway one in seconds.
constexpr int64_t kMaxLoopIterations = 10'000'000;
// Statements and expressions evaluated one inside another (macros calling macros included): a bound on the C++
// stack the renderer uses, like Python's recursion limit.
constexpr int kMaxNesting = 2000;

// Counts one level of nesting for as long as it lives.
class NestingGuard {
 public:
  explicit NestingGuard(int& n) : n_(n) {
    if (++n_ > kMaxNesting) {
      --n_;
      fail("RecursionError: the template nests statements, expressions and macro calls more than " +
           std::to_string(kMaxNesting) + " deep");
    }
  }
  ~NestingGuard() { --n_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& n_;
};

std::string undefined_attr(const Value& obj, const std::string& name) {
  return "'" + type_name(obj) + " object' has no attribute '" + name + "'";
}

}  // namespace

Interpreter::Interpreter(Value globals, std::optional<std::chrono::system_clock::time_point> now)
    : globals_(std::move(globals)), now_(now) {}

Interpreter::~Interpreter() {
  // A macro stored in (a value reachable from) the frame it captured is a cycle of shared pointers.
  for (const ScopePtr& s : captured_) {
    s->vars.clear();
    s->parent.reset();
  }
}

std::string Interpreter::render(const Template& t) {
  std::string out;
  auto root = std::make_shared<Scope>();
  exec(t.body, out, root);
  return out;
}

Interpreter::Flow Interpreter::exec(const Body& body, std::string& out, const ScopePtr& scope) {
  for (const auto& s : body) {
    const Flow f = exec_stmt(*s, out, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, std::string& out, const ScopePtr& scope) {
  try {
    const NestingGuard guard(nesting_);
    switch (s.kind) {
      case StmtKind::Text: out += s.text; break;
      case StmtKind::Print: out += to_str(eval(*s.expr, scope)); break;
      case StmtKind::If:
        for (const auto& [cond, body] : s.branches) {
          if (truthy(eval(*cond, scope))) return exec(body, out, scope);
        }
        return exec(s.else_body, out, scope);
      case StmtKind::For: exec_for(s, out, scope); break;
      case StmtKind::Set: assign(s.target, eval(*s.expr, scope), scope); break;
      case StmtKind::SetBlock: {
        std::string captured;
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        exec(s.body, captured, inner);
        assign(s.target, apply_filter_chain(s.filters, Value::from(std::move(captured)), scope), scope);
        break;
      }
      case StmtKind::Macro: scope->vars[s.name] = make_macro(s, scope, s.name); break;
      case StmtKind::CallBlock: {
        const Expr& call = *s.expr;
        Value fn = eval(*call.a, scope);
        CallArgs args = eval_args(call.args, scope);
        args.keyword.emplace_back("caller", make_macro(s, scope, "caller"));
        out += to_str(call_at(fn, args, call));
        break;
      }
      case StmtKind::FilterBlock: {
        std::string captured;
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        exec(s.body, captured, inner);
        out += to_str(apply_filter_chain(s.filters, Value::from(std::move(captured)), scope));
        break;
      }
      case StmtKind::With: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        for (const auto& [name, value] : s.assignments) inner->vars[name] = eval(*value, scope);
        return exec(s.body, out, inner);
      }
      case StmtKind::Scope: {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        exec(s.body, out, inner);
        break;
      }
      case StmtKind::Break: return Flow::Break;
      case StmtKind::Continue: return Flow::Continue;
    }
  } catch (const EvalError& e) {
    throw TemplateError(e.what(), s.line, s.column);
  }
  return Flow::Normal;
}

void Interpreter::exec_for(const Stmt& s, std::string& out, const ScopePtr& scope, const Value* given, int depth) {
  const Value iterable = given != nullptr ? *given : eval(*s.expr, scope);
  if (iterable.is_dict() && iterable.dict->is_namespace) fail("TypeError: 'Namespace' object is not iterable");
  std::vector<Value> items = iterate(iterable);
  if (s.condition) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>();
      probe->parent = scope;
      assign(s.target, item, probe);
      if (truthy(eval(*s.condition, probe))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec(s.else_body, out, scope);
    return;
  }
  const auto n = static_cast<int64_t>(items.size());
  // loop.changed() remembers its last arguments across iterations.
  auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();
  for (int64_t i = 0; i < n; ++i) {
    if (++iterations_ > kMaxLoopIterations) {
      fail("the template ran more than " + std::to_string(kMaxLoopIterations) + " loop iterations");
    }
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    Value loop = Value::new_dict();
    DictData& d = *loop.dict;
    d.set(Value::from("index"), Value::from(i + 1));
    d.set(Value::from("index0"), Value::from(i));
    d.set(Value::from("revindex"), Value::from(n - i));
    d.set(Value::from("revindex0"), Value::from(n - i - 1));
    d.set(Value::from("first"), Value::from(i == 0));
    d.set(Value::from("last"), Value::from(i == n - 1));
    d.set(Value::from("length"), Value::from(n));
    d.set(Value::from("depth"), Value::from(depth));
    d.set(Value::from("depth0"), Value::from(depth - 1));
    if (i > 0) d.set(Value::from("previtem"), items[static_cast<size_t>(i - 1)]);
    if (i + 1 < n) d.set(Value::from("nextitem"), items[static_cast<size_t>(i + 1)]);
    d.set(Value::from("cycle"), Value::from_function("loop.cycle", [i](CallArgs& args) {
            if (args.positional.empty()) fail("TypeError: no items for cycling given");
            return args.positional[static_cast<size_t>(i) % args.positional.size()];
          }));
    d.set(Value::from("changed"), Value::from_function("loop.changed", [last_changed](CallArgs& args) {
            if (last_changed->has_value()) {
              const auto& prev = **last_changed;
              bool same = prev.size() == args.positional.size();
              for (size_t k = 0; same && k < prev.size(); ++k) same = equals(prev[k], args.positional[k]);
              if (same) return Value::from(false);
            }
            *last_changed = args.positional;
            return Value::from(true);
          }));
    if (s.recursive) {
      captured_.push_back(scope);
      d.set(Value::from("__call__"), Value::from_function("loop", [this, &s, scope, depth](CallArgs& args) {
              if (args.positional.size() != 1 || !args.keyword.empty()) fail("TypeError: loop() takes one iterable");
              if (depth >= kMaxCallDepth) fail("RecursionError: recursive loop nested more than " + std::to_string(kMaxCallDepth) + " deep");
              std::string rendered;
              exec_for(s, rendered, scope, &args.positional[0], depth + 1);
              return Value::from(std::move(rendered));
            }));
    }
    inner->vars["loop"] = loop;
    assign(s.target, items[static_cast<size_t>(i)], inner);
    if (exec(s.body, out, inner) == Flow::Break) break;
  }
}

void Interpreter::assign(const Target& t, Value v, const ScopePtr& scope) {
  if (!t.attribute.empty()) {
    const Value ns = lookup(t.names[0], scope);
    if (!ns.is_dict() || !ns.dict->is_namespace) {
      fail("TemplateRuntimeError: cannot assign attribute on non-namespace object '" + t.names[0] + "'");
    }
    ns.dict->set(Value::from(t.attribute), std::move(v));
    return;
  }
  if (!t.tuple) {
    scope->vars[t.names[0]] = std::move(v);
    return;
  }
  const std::vector<Value> parts = iterate(v);
  if (parts.size() != t.names.size()) {
    fail(std::string("ValueError: ") + (parts.size() > t.names.size() ? "too many" : "not enough") +
         " values to unpack (expected " + std::to_string(t.names.size()) + ", got " + std::to_string(parts.size()) + ")");
  }
  for (size_t i = 0; i < parts.size(); ++i) scope->vars[t.names[i]] = parts[i];
}

// A macro (or a call block's `caller`) as a callable value: its body runs in a frame of its own whose parent is
// the frame it was defined in.
Value Interpreter::make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name) {
  captured_.push_back(scope);
  return Value::from_function(name, [this, &s, scope, name](CallArgs& args) {
    if (depth_ >= kMaxCallDepth) fail("RecursionError: macro calls nested more than " + std::to_string(kMaxCallDepth) + " deep");
    auto frame = std::make_shared<Scope>();
    frame->parent = scope;
    std::vector<Value> varargs;
    Value kwargs = Value::new_dict();
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < s.params.size()) {
        frame->vars[s.params[i].name] = args.positional[i];
      } else if (s.uses_varargs) {
        varargs.push_back(args.positional[i]);
      } else {
        fail("TypeError: macro '" + name + "' takes not more than " + std::to_string(s.params.size()) + " argument(s)");
      }
    }
    for (auto& [key, value] : args.keyword) {
      bool matched = false;
      for (size_t i = 0; i < s.params.size(); ++i) {
        if (s.params[i].name != key) continue;
        if (i < args.positional.size()) fail("TypeError: macro '" + name + "' got multiple values for argument '" + key + "'");
        frame->vars[key] = value;
        matched = true;
      }
      if (matched) continue;
      if (key == "caller" && (s.uses_caller || s.kind == StmtKind::Macro)) {
        frame->vars["caller"] = value;
      } else if (s.uses_kwargs) {
        kwargs.dict->set(Value::from(key), value);
      } else {
        fail("TypeError: macro '" + name + "' takes no keyword argument '" + key + "'");
      }
    }
    for (size_t i = args.positional.size(); i < s.params.size(); ++i) {
      const MacroParam& p = s.params[i];
      if (frame->vars.count(p.name) != 0) continue;
      frame->vars[p.name] = p.default_value ? eval(*p.default_value, frame)
                                            : Value::undefined("parameter '" + p.name + "' was not provided");
    }
    frame->vars["varargs"] = Value::from_list(std::move(varargs), true);
    frame->vars["kwargs"] = kwargs;
    if (frame->vars.count("caller") == 0 && s.kind == StmtKind::Macro) {
      frame->vars["caller"] = Value::undefined("No caller defined");
    }
    std::string out;
    ++depth_;
    try {
      exec(s.body, out, frame);
    } catch (...) {
      --depth_;
      throw;
    }
    --depth_;
    return Value::from(std::move(out));
  });
}

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) {
  for (const Scope* s = scope.get(); s != nullptr; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  if (const Value* v = globals_.dict->find(name)) return *v;
  Value g = find_global(name, now_ ? &*now_ : nullptr);
  if (!g.is_undefined()) return g;
  return Value::undefined("'" + name + "' is undefined");
}

CallArgs Interpreter::eval_args(const ArgExprs& args, const ScopePtr& scope) {
  CallArgs out;
  for (const auto& a : args.positional) out.positional.push_back(eval(*a, scope));
  if (args.star) {
    for (Value& v : iterate(eval(*args.star, scope))) out.positional.push_back(std::move(v));
  }
  for (const auto& [k, v] : args.keyword) out.keyword.emplace_back(k, eval(*v, scope));
  if (args.double_star) {
    const Value d = eval(*args.double_star, scope);
    if (!d.is_dict()) fail("TypeError: argument after ** must be a mapping, not " + type_name(d));
    for (const auto& [k, v] : d.dict->items) out.keyword.emplace_back(to_str(k), v);
  }
  return out;
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_callable()) return fn.function->call(args);
  if (fn.is_dict()) {
    if (const Value* c = fn.dict->find("__call__"); c != nullptr && c->is_callable()) return c->function->call(args);  // loop(...)
  }
  if (fn.is_undefined()) fail_undefined(fn);
  fail("TypeError: '" + type_name(fn) + "' object is not callable");
}

Value Interpreter::call_at(const Value& fn, CallArgs& args, const Expr& at) {
  try {
    return call(fn, args);
  } catch (const EvalError& e) {
    throw TemplateError(e.what(), at.line, at.column);
  }
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  FilterFn f = find_filter(name);
  if (f == nullptr) fail("TemplateRuntimeError: No filter named '" + name + "' found.");  // jinja2's words
  return f(*this, input, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& input, CallArgs& args) {
  TestFn t = find_test(name);
  if (t == nullptr) fail("TemplateRuntimeError: No test named '" + name + "' found.");  // jinja2's words
  return t(*this, input, args);
}

Value Interpreter::apply_filter_chain(const std::vector<ExprPtr>& chain, Value input, const ScopePtr& scope) {
  for (const auto& f : chain) {
    CallArgs args = eval_args(f->args, scope);
    input = apply_filter(f->name, input, args);
  }
  return input;
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case Value::Kind::Undefined: fail_undefined(obj);
    case Value::Kind::Dict: {
      if (obj.dict->is_namespace) {
        if (const Value* v = obj.dict->find(name)) return *v;
        return Value::undefined("'Namespace object' has no attribute '" + name + "'");
      }
      bool found = false;
      Value m = find_method(obj, name, &found);
      if (found) return m;
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined(undefined_attr(obj, name));
    }
    case Value::Kind::String:
    case Value::Kind::List: {
      bool found = false;
      Value m = find_method(obj, name, &found);
      if (found) return m;
      return Value::undefined(undefined_attr(obj, name));
    }
    default: return Value::undefined(undefined_attr(obj, name));
  }
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  switch (obj.kind) {
    case Value::Kind::Undefined: fail_undefined(obj);
    case Value::Kind::Dict:
      if (!obj.dict->is_namespace) {
        if (const Value* v = obj.dict->find(key)) return *v;
      }
      break;
    case Value::Kind::List:
    case Value::Kind::String:
      if (key.is_int_like() && !(obj.is_list() && obj.list->generator)) {
        int64_t i = key.kind == Value::Kind::Bool ? key.boolean : key.integer;
        if (obj.is_list()) {
          const auto n = static_cast<int64_t>(obj.list->items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) return obj.list->items[static_cast<size_t>(i)];
          return Value::undefined("'" + type_name(obj) + " object' has no element " + std::to_string(key.integer));
        }
        const std::u32string chars = utf8_decode(obj.text);
        const auto n = static_cast<int64_t>(chars.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value::from(utf8_encode(chars.substr(static_cast<size_t>(i), 1)));
        return Value::undefined("'str object' has no element " + std::to_string(key.integer));
      }
      break;
    default: break;
  }
  if (key.is_string()) return get_attr(obj, key.text);
  return Value::undefined("'" + type_name(obj) + " object' has no element " + repr(key));
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  try {
    const NestingGuard guard(nesting_);
    return eval_inner(e, scope);
  } catch (const EvalError& err) {
    throw TemplateError(err.what(), e.line, e.column);
  }
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::Literal: return e.literal;
    case ExprKind::Name: return lookup(e.name, scope);
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& i : e.items) items.push_back(eval(*i, scope));
      return Value::from_list(std::move(items), e.kind == ExprKind::Tuple);
    }
    case ExprKind::Dict: {
      Value d = Value::new_dict();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i], scope);
        if (k.is_list() && !k.list->tuple) fail("TypeError: unhashable type: 'list'");
        if (k.is_dict()) fail("TypeError: unhashable type: 'dict'");
        d.dict->set(std::move(k), eval(*e.items[i + 1], scope));
      }
      return d;
    }
    case ExprKind::Attr: return get_attr(eval(*e.a, scope), e.name);
    case ExprKind::Item: return get_item(eval(*e.a, scope), eval(*e.b, scope));
    case ExprKind::Slice: {
      const Value obj = eval(*e.items[0], scope);
      auto bound = [&](const ExprPtr& x) { return x ? eval(*x, scope) : Value::none(); };
      return slice(obj, bound(e.a), bound(e.b), bound(e.c));
    }
    case ExprKind::Call: {
      const Value fn = eval(*e.a, scope);
      CallArgs args = eval_args(e.args, scope);
      return call(fn, args);
    }
    case ExprKind::Filter: {
      const Value input = eval(*e.a, scope);
      CallArgs args = eval_args(e.args, scope);
      return apply_filter(e.name, input, args);
    }
    case ExprKind::Test: {
      const Value input = eval(*e.a, scope);
      CallArgs args = eval_args(e.args, scope);
      return Value::from(apply_test(e.name, input, args));
    }
    case ExprKind::Unary: {
      const Value v = eval(*e.a, scope);
      if (e.name == "not") return Value::from(!truthy(v));
      if (e.name == "-") return negate(v);
      if (!v.is_number()) {
        if (v.is_undefined()) fail_undefined(v);
        fail("TypeError: bad operand type for unary +: '" + type_name(v) + "'");
      }
      return v.kind == Value::Kind::Bool ? Value::from(static_cast<int64_t>(v.boolean)) : v;
    }
    case ExprKind::Binary: {
      if (e.name == "and") {
        Value l = eval(*e.a, scope);
        return truthy(l) ? eval(*e.b, scope) : l;
      }
      if (e.name == "or") {
        Value l = eval(*e.a, scope);
        return truthy(l) ? l : eval(*e.b, scope);
      }
      const Value l = eval(*e.a, scope);
      const Value r = eval(*e.b, scope);
      if (e.name == "~") return Value::from(to_str(l) + to_str(r));
      return binary_operator(e.name, l, r);
    }
    case ExprKind::Compare: {
      Value left = eval(*e.items[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.items[i + 1], scope);
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==") {
          r = equals(left, right);
        } else if (op == "!=") {
          r = !equals(left, right);
        } else if (op == "in") {
          r = contains(right, left);
        } else if (op == "not in") {
          r = !contains(right, left);
        } else {
          const int c = compare(left, right);
          r = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
        }
        if (!r) return Value::from(false);
        left = std::move(right);
      }
      return Value::from(true);
    }
    case ExprKind::Conditional:
      if (truthy(eval(*e.a, scope))) return eval(*e.b, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value::undefined("");
}

}  // namespace strata::chat
