// The parsed template: expression and statement nodes, each with the line and column it starts at.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.hpp"

namespace strata::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star, double_star;  // *args, **kwargs
};

enum class ExprKind {
  Literal,    // literal
  Name,       // name
  List,       // items
  Tuple,      // items
  Dict,       // items: key, value, key, value...
  Attr,       // a.name
  Item,       // a[b]
  Slice,      // a[b:c:d], each optional
  Call,       // a(args)
  Filter,     // a|name(args); a is null inside {% filter %} and {% set x | f %} (the body is the input)
  Test,       // a is name(args)
  Unary,      // name: "-", "+", "not"
  Binary,     // name: the operator; also "and", "or", "~"
  Compare,    // items: operands, ops: the operators between them (chained as in Python)
  Conditional,  // b if a else c (c optional)
};

struct Expr {
  ExprKind kind;
  int line = 0, column = 0;
  int height = 1;  // of the tree below it, bounded by the parser (evaluation and destruction recurse)
  Value literal;
  std::string name;
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;
  ArgExprs args;
};

// A for/set target: one name, a tuple of names, or (set only) a namespace attribute.
struct Target {
  std::vector<std::string> names;
  bool tuple = false;
  std::string attribute;  // set ns.attribute = ...: names[0] is the namespace
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

enum class StmtKind { Text, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue, Scope };

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  StmtKind kind;
  int line = 0, column = 0;
  std::string text;                                  // Text
  ExprPtr expr;                                      // Print, Set value, For iterable, CallBlock call
  std::vector<std::pair<ExprPtr, Body>> branches;    // If/elif: condition and body
  Body body, else_body;                              // For/If/Macro/SetBlock/FilterBlock/With/Scope bodies
  Target target;                                     // For, Set, SetBlock
  ExprPtr condition;                                 // For ... if condition
  std::vector<ExprPtr> filters;                      // FilterBlock, SetBlock: Filter nodes with a null input
  std::string name;                                  // Macro
  std::vector<MacroParam> params;                    // Macro, CallBlock (caller's parameters)
  std::vector<std::pair<std::string, ExprPtr>> assignments;  // With
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;  // Macro, CallBlock
  bool recursive = false;                            // For: loop(children) renders the body again
};

struct Template {
  Body body;
};

}  // namespace strata::chat
