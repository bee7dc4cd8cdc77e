// Renders a parsed template: statements into text, expressions into values, with jinja2's scoping (a for loop's
// body and a macro get their own frame; `if` does not) and its Undefined.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ast.hpp"

namespace strata::chat {

class Interpreter {
 public:
  // `globals` is a dict Value; `now` (may be null: the system clock) fixes strftime_now.
  Interpreter(Value globals, std::optional<std::chrono::system_clock::time_point> now);
  ~Interpreter();  // breaks the cycles macros make with the frames they capture
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;
  std::string render(const Template& t);

  // What filters and tests call back into.
  Value call(const Value& fn, CallArgs& args);
  Value call_at(const Value& fn, CallArgs& args, const Expr& at);  // errors carry `at`'s line
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
  bool apply_test(const std::string& name, const Value& input, CallArgs& args);
  Value get_attr(const Value& obj, const std::string& name);  // jinja2's `obj.name`
  Value get_item(const Value& obj, const Value& key);         // jinja2's `obj[key]`

 private:
  struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
  };
  using ScopePtr = std::shared_ptr<Scope>;
  enum class Flow { Normal, Break, Continue };

  Flow exec(const Body& body, std::string& out, const ScopePtr& scope);
  Flow exec_stmt(const Stmt& s, std::string& out, const ScopePtr& scope);
  // `iterable` null: the loop's own expression; set for a recursive loop(children) call, at `depth`.
  void exec_for(const Stmt& s, std::string& out, const ScopePtr& scope, const Value* iterable = nullptr, int depth = 1);
  void assign(const Target& t, Value v, const ScopePtr& scope);
  Value make_macro(const Stmt& s, const ScopePtr& scope, const std::string& name);
  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope);
  CallArgs eval_args(const ArgExprs& args, const ScopePtr& scope);
  Value apply_filter_chain(const std::vector<ExprPtr>& chain, Value input, const ScopePtr& scope);

  Value globals_;
  std::optional<std::chrono::system_clock::time_point> now_;
  int depth_ = 0;  // macro calls in progress, bounded against runaway recursion
  int64_t iterations_ = 0;  // loop iterations so far, bounded so that no template runs without end
  int nesting_ = 0;         // statements and expressions being evaluated, one inside another
  std::vector<ScopePtr> captured_;  // frames a macro, caller or recursive loop holds on to
};

}  // namespace strata::chat
