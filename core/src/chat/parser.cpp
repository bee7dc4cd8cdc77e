// Recursive descent over the tokens, one function per jinja2 grammar level (parse_or, parse_compare...), so
// that precedence and what binds to a filter or test are those of jinja2.
#include "parser.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "builtins.hpp"
#include "lexer.hpp"
#include "strata/chat_template.hpp"

namespace strata::chat {
namespace {

// Tags jinja2 has that this renderer leaves out: a clear error rather than "unknown tag".
const std::set<std::string, std::less<>> kUnsupportedTags = {"extends", "include", "import", "from", "autoescape",
                                                             "trans", "do"};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Template run() {
    Template t;
    std::string end = parse_body(t.body, {});
    (void)end;
    return t;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }

  [[noreturn]] void error(const std::string& msg, const Token& at) const { throw TemplateError(msg, at.line, at.column); }
  [[noreturn]] void error(const std::string& msg) const { error(msg, cur()); }

  bool is_op(std::string_view op) const { return cur().kind == TokenKind::Operator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().kind == TokenKind::Name && cur().text == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::End: return "end of template";
      case TokenKind::BlockEnd: return "end of statement block '%}'";
      case TokenKind::PrintEnd: return "end of print statement '}}'";
      case TokenKind::Text: return "template text";
      case TokenKind::String: return "string";
      default: return "'" + t.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) error("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  void expect_block_end(const char* tag) {
    if (cur().kind != TokenKind::BlockEnd) {
      error("expected end of '" + std::string(tag) + "' tag '%}', got " + describe(cur()));
    }
    ++pos_;
  }
  std::string expect_name(const char* what) {
    if (cur().kind != TokenKind::Name) error(std::string("expected ") + what + ", got " + describe(cur()));
    return next().text;
  }

  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  static constexpr int kMaxHeight = 400;

  // Records a finished node's height from its children's; too deep a tree is refused here, once, rather than
  // recursing without bound when it is evaluated or freed.
  ExprPtr seal(ExprPtr e) {
    int h = 0;
    const auto see = [&h](const ExprPtr& c) {
      if (c) h = std::max(h, c->height);
    };
    see(e->a);
    see(e->b);
    see(e->c);
    for (const auto& i : e->items) see(i);
    for (const auto& i : e->args.positional) see(i);
    for (const auto& kv : e->args.keyword) see(kv.second);
    see(e->args.star);
    see(e->args.double_star);
    e->height = h + 1;
    if (e->height > kMaxHeight) {
      throw TemplateError("expression too deeply nested (more than " + std::to_string(kMaxHeight) + " levels)", e->line, e->column);
    }
    return e;
  }

  // Statements up to one of `ends` ({% end... %}, {% else %}...): returns the end tag's name, the tag name
  // consumed, its arguments and '%}' not yet.
  std::string parse_body(Body& body, std::initializer_list<std::string_view> ends, const Token* opener = nullptr,
                         const char* opener_name = nullptr) {
    for (;;) {
      const Token& t = cur();
      switch (t.kind) {
        case TokenKind::Text: {
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Text;
          s->line = t.line;
          s->column = t.column;
          s->text = t.text;
          body.push_back(std::move(s));
          ++pos_;
          break;
        }
        case TokenKind::PrintBegin: {
          ++pos_;
          auto s = std::make_unique<Stmt>();
          s->kind = StmtKind::Print;
          s->line = t.line;
          s->column = t.column;
          s->expr = parse_tuple(true, false);
          if (cur().kind != TokenKind::PrintEnd) error("expected end of print statement '}}', got " + describe(cur()));
          ++pos_;
          body.push_back(std::move(s));
          break;
        }
        case TokenKind::BlockBegin: {
          const Token& name = peek();
          if (name.kind != TokenKind::Name) error("expected a statement name after '{%', got " + describe(name), name);
          for (std::string_view e : ends) {
            if (name.text == e) {
              pos_ += 2;
              return name.text;
            }
          }
          const bool closer = name.text.rfind("end", 0) == 0 || name.text == "else" || name.text == "elif";
          if (closer && opener != nullptr) {
            error("'{% " + name.text + " %}' does not close the innermost open block, '" + opener_name +
                      "' (opened at line " + std::to_string(opener->line) + "), which needs {% end" + opener_name + " %}",
                  name);
          }
          ++pos_;
          body.push_back(parse_statement());
          break;
        }
        case TokenKind::End:
          if (opener != nullptr) {
            error("unclosed '" + std::string(opener_name) + "' block (opened at line " + std::to_string(opener->line) +
                  "): the template ended before {% end" + std::string(opener_name) + " %}");
          }
          return "";
        default: error("unexpected " + describe(t));
      }
    }
  }

  std::unique_ptr<Stmt> new_stmt(StmtKind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  std::unique_ptr<Stmt> parse_statement() {
    const Token tag = next();
    if (++nesting_ > kMaxNesting) error("blocks nested more than " + std::to_string(kMaxNesting) + " deep", tag);
    auto s = parse_tag(tag);
    --nesting_;
    return s;
  }

  std::unique_ptr<Stmt> parse_tag(const Token& tag) {
    const std::string& n = tag.text;
    if (n == "if") return parse_if(tag);
    if (n == "for") return parse_for(tag);
    if (n == "set") return parse_set(tag);
    if (n == "macro") return parse_macro(tag);
    if (n == "call") return parse_call_block(tag);
    if (n == "filter") return parse_filter_block(tag);
    if (n == "with") return parse_with(tag);
    if (n == "generation") return parse_scope(tag, "generation", "endgeneration");
    if (n == "block") return parse_block(tag);
    if (n == "break" || n == "continue") {
      if (loop_depth_ == 0) error("'" + n + "' outside a for loop", tag);
      expect_block_end(n.c_str());
      return new_stmt(n == "break" ? StmtKind::Break : StmtKind::Continue, tag);
    }
    if (kUnsupportedTags.count(n) != 0) {
      error("unsupported construct '{% " + n + " %}': chat templates are rendered on their own, without " +
                "template inheritance, includes, imports or extensions",
            tag);
    }
    if (n.rfind("end", 0) == 0 || n == "else" || n == "elif") error("unexpected '{% " + n + " %}' without its opening tag", tag);
    error("unknown tag '{% " + n + " %}'", tag);
  }

  std::unique_ptr<Stmt> parse_if(const Token& tag) {
    auto s = new_stmt(StmtKind::If, tag);
    const bool was_soft = soft_;
    soft_ = true;
    ExprPtr cond = parse_tuple(false, false);
    for (;;) {
      expect_block_end("if");
      Body body;
      const std::string end = parse_body(body, {"elif", "else", "endif"}, &tag, "if");
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_tuple(false, false);
        continue;
      }
      if (end == "else") {
        expect_block_end("else");
        parse_body(s->else_body, {"endif"}, &tag, "if");
      }
      expect_block_end("endif");
      break;
    }
    soft_ = was_soft;
    return s;
  }

  Target parse_target(bool allow_attribute) {
    Target t;
    const Token& at = cur();
    t.names.push_back(expect_name("a variable name"));
    if (allow_attribute && skip_op(".")) {
      t.attribute = expect_name("an attribute name");
      return t;
    }
    while (skip_op(",")) {
      t.tuple = true;
      if (cur().kind != TokenKind::Name || is_name("in")) break;
      t.names.push_back(expect_name("a variable name"));
    }
    for (const std::string& name : t.names) {
      if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None") {
        error("cannot assign to '" + name + "'", at);
      }
    }
    return t;
  }

  // Statements that open a new frame in jinja2 (loops, macros, blocks) are not "soft": an unknown filter in
  // them fails when the template is compiled, not when it is reached.
  template <typename F>
  void in_frame(F&& f) {
    const bool was_soft = soft_;
    soft_ = false;
    f();
    soft_ = was_soft;
  }

  std::unique_ptr<Stmt> parse_for(const Token& tag) {
    auto s = new_stmt(StmtKind::For, tag);
    if (cur().kind == TokenKind::Operator && cur().text == "(") error("parenthesized for targets are not supported");
    s->target = parse_target(false);
    if (!skip_name("in")) error("expected 'in' in for loop, got " + describe(cur()));
    in_frame([&] {
      s->expr = parse_tuple(false, false, {"recursive"});
      if (skip_name("if")) s->condition = parse_expression(true);
      s->recursive = skip_name("recursive");
      expect_block_end("for");
      ++loop_depth_;
      const std::string end = parse_body(s->body, {"endfor", "else"}, &tag, "for");
      --loop_depth_;
      if (end == "else") {
        expect_block_end("else");
        const int saved = loop_depth_;
        loop_depth_ = 0;  // {% break %} in a loop's else belongs to no loop
        parse_body(s->else_body, {"endfor"}, &tag, "for");
        loop_depth_ = saved;
      }
      expect_block_end("endfor");
    });
    return s;
  }

  std::unique_ptr<Stmt> parse_set(const Token& tag) {
    auto s = new_stmt(StmtKind::Set, tag);
    s->target = parse_target(true);
    if (skip_op("=")) {
      s->expr = parse_tuple(true, false);
      expect_block_end("set");
      return s;
    }
    if (s->target.tuple || !s->target.attribute.empty()) error("a block {% set %} assigns one plain name", tag);
    s->kind = StmtKind::SetBlock;
    in_frame([&] {
      if (is_op("|")) parse_filter_chain(s->filters);
      expect_block_end("set");
      parse_body(s->body, {"endset"}, &tag, "set");
      expect_block_end("endset");
    });
    return s;
  }

  void parse_params(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name("a parameter name");
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
      } else if (!params.empty() && params.back().default_value) {
        error("parameter '" + p.name + "' without a default follows one with a default");
      }
      params.push_back(std::move(p));
    }
    expect_op(")");
  }

  // Which of caller/varargs/kwargs a macro body refers to (jinja2 only accepts extra arguments then).
  void note_names(Stmt& s, const std::set<std::string>& names) {
    s.uses_caller = names.count("caller") != 0;
    s.uses_varargs = names.count("varargs") != 0;
    s.uses_kwargs = names.count("kwargs") != 0;
  }

  std::unique_ptr<Stmt> parse_macro(const Token& tag) {
    auto s = new_stmt(StmtKind::Macro, tag);
    s->name = expect_name("a macro name");
    std::set<std::string> names;
    in_frame([&] {
      parse_params(s->params);
      expect_block_end("macro");
      name_sinks_.push_back(&names);
      const int saved = loop_depth_;
      loop_depth_ = 0;
      parse_body(s->body, {"endmacro"}, &tag, "macro");
      loop_depth_ = saved;
      name_sinks_.pop_back();
      if (cur().kind == TokenKind::Name && cur().text == s->name) ++pos_;
      expect_block_end("endmacro");
    });
    note_names(*s, names);
    return s;
  }

  std::unique_ptr<Stmt> parse_call_block(const Token& tag) {
    auto s = new_stmt(StmtKind::CallBlock, tag);
    std::set<std::string> names;
    in_frame([&] {
      if (is_op("(")) parse_params(s->params);
      s->expr = parse_expression(true);
      if (s->expr->kind != ExprKind::Call) error("expected a call after '{% call %}'", tag);
      expect_block_end("call");
      name_sinks_.push_back(&names);
      const int saved = loop_depth_;
      loop_depth_ = 0;
      parse_body(s->body, {"endcall"}, &tag, "call");
      loop_depth_ = saved;
      name_sinks_.pop_back();
      expect_block_end("endcall");
    });
    note_names(*s, names);
    return s;
  }

  std::unique_ptr<Stmt> parse_filter_block(const Token& tag) {
    auto s = new_stmt(StmtKind::FilterBlock, tag);
    in_frame([&] {
      parse_filter_chain(s->filters, false);
      expect_block_end("filter");
      parse_body(s->body, {"endfilter"}, &tag, "filter");
      expect_block_end("endfilter");
    });
    return s;
  }

  std::unique_ptr<Stmt> parse_with(const Token& tag) {
    auto s = new_stmt(StmtKind::With, tag);
    while (cur().kind != TokenKind::BlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      std::string name = expect_name("a variable name");
      expect_op("=");
      s->assignments.emplace_back(std::move(name), parse_expression(true));
    }
    in_frame([&] {
      expect_block_end("with");
      parse_body(s->body, {"endwith"}, &tag, "with");
      expect_block_end("endwith");
    });
    return s;
  }

  std::unique_ptr<Stmt> parse_scope(const Token& tag, const char* name, const char* end) {
    auto s = new_stmt(StmtKind::Scope, tag);
    in_frame([&] {
      expect_block_end(name);
      parse_body(s->body, {end}, &tag, name);
      expect_block_end(end);
    });
    return s;
  }

  // {% block NAME [scoped] [required] %}: with no template inheritance, a block renders where it stands.
  std::unique_ptr<Stmt> parse_block(const Token& tag) {
    auto s = new_stmt(StmtKind::Scope, tag);
    const std::string name = expect_name("a block name");
    while (skip_name("scoped") || skip_name("required")) {
    }
    in_frame([&] {
      expect_block_end("block");
      parse_body(s->body, {"endblock"}, &tag, "block");
      if (cur().kind == TokenKind::Name) {
        if (cur().text != name) error("'{% endblock " + cur().text + " %}' closes block '" + name + "'");
        ++pos_;
      }
      expect_block_end("endblock");
    });
    return s;
  }

  // ---- expressions ----

  bool tuple_end(std::initializer_list<std::string_view> extra_end) const {
    const Token& t = cur();
    if (t.kind == TokenKind::BlockEnd || t.kind == TokenKind::PrintEnd || t.kind == TokenKind::End) return true;
    if (t.kind == TokenKind::Operator && (t.text == ")" || t.text == "]" || t.text == "}")) return true;
    for (std::string_view e : extra_end) {
      if (t.kind == TokenKind::Name && t.text == e) return true;
    }
    return false;
  }

  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens, std::initializer_list<std::string_view> extra_end = {}) {
    const Token start = cur();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    for (;;) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        is_tuple = true;
      }
      if (tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condexpr));
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) error("expected an expression, got " + describe(cur()));
    }
    auto e = make(ExprKind::Tuple, start);
    e->items = std::move(items);
    return seal(std::move(e));
  }

  ExprPtr parse_expression(bool with_condexpr) {
    // Each level of brackets, unary minus or `not` recurses; bound it so that no input exhausts the stack.
    if (++nesting_ > kMaxNesting) error("expression nested more than " + std::to_string(kMaxNesting) + " deep");
    ExprPtr e = with_condexpr ? parse_condexpr() : parse_or();
    --nesting_;
    return e;
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Token at = next();
      const bool was_soft = soft_;
      soft_ = true;
      auto c = make(ExprKind::Conditional, at);
      c->a = parse_or();
      c->b = std::move(e);
      if (skip_name("else")) c->c = parse_condexpr();
      soft_ = was_soft;
      e = seal(std::move(c));
    }
    return e;
  }

  ExprPtr binary(const Token& at, std::string op, ExprPtr l, ExprPtr r) {
    auto e = make(ExprKind::Binary, at);
    e->name = std::move(op);
    e->a = std::move(l);
    e->b = std::move(r);
    return seal(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token at = next();
      e = binary(at, "or", std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token at = next();
      e = binary(at, "and", std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token at = next();
      if (++nesting_ > kMaxNesting) error("expression nested more than " + std::to_string(kMaxNesting) + " deep");
      auto e = make(ExprKind::Unary, at);
      e->name = "not";
      e->a = parse_not();
      --nesting_;
      return seal(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token start = cur();
    ExprPtr first = parse_math1();
    std::vector<ExprPtr> operands;
    std::vector<std::string> ops;
    for (;;) {
      std::string op;
      if (cur().kind == TokenKind::Operator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" || cur().text == "<=" ||
           cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        ++pos_;
        op = "in";
      } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
        pos_ += 2;
        op = "not in";
      } else {
        break;
      }
      ops.push_back(op);
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return first;
    auto e = make(ExprKind::Compare, start);
    e->items.push_back(std::move(first));
    for (auto& o : operands) e->items.push_back(std::move(o));
    e->ops = std::move(ops);
    return seal(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token at = next();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token at = next();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token at = next();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token at = next();
      e = binary(at, "**", std::move(e), parse_unary(true));
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token at = next();
      if (++nesting_ > kMaxNesting) error("expression nested more than " + std::to_string(kMaxNesting) + " deep");
      e = make(ExprKind::Unary, at);
      e->name = at.text;
      e->a = parse_unary(false);
      --nesting_;
      e = seal(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token t = cur();
    switch (t.kind) {
      case TokenKind::Name: {
        ++pos_;
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
          auto e = make(ExprKind::Literal, t);
          e->literal = Value::from(t.text[0] == 't' || t.text[0] == 'T');
          return e;
        }
        if (t.text == "none" || t.text == "None") {
          auto e = make(ExprKind::Literal, t);
          e->literal = Value::none();
          return e;
        }
        for (auto* sink : name_sinks_) sink->insert(t.text);
        auto e = make(ExprKind::Name, t);
        e->name = t.text;
        return e;
      }
      case TokenKind::String: {
        std::string s;
        while (cur().kind == TokenKind::String) s += next().text;  // adjacent literals concatenate
        auto e = make(ExprKind::Literal, t);
        e->literal = Value::from(std::move(s));
        return e;
      }
      case TokenKind::Int: {
        ++pos_;
        auto e = make(ExprKind::Literal, t);
        const std::optional<int64_t> n = parse_decimal(t.text);
        e->literal = n ? Value::from(*n) : Value::from(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TokenKind::Float: {
        ++pos_;
        auto e = make(ExprKind::Literal, t);
        e->literal = Value::from(std::strtod(t.text.c_str(), nullptr));  // 1e999 is inf, as in Python
        return e;
      }
      case TokenKind::Operator:
        if (t.text == "(") {
          ++pos_;
          ExprPtr e = parse_tuple(true, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") {
          ++pos_;
          auto e = make(ExprKind::List, t);
          while (!is_op("]")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("]")) break;
            e->items.push_back(parse_expression(true));
          }
          expect_op("]");
          return seal(std::move(e));
        }
        if (t.text == "{") {
          ++pos_;
          auto e = make(ExprKind::Dict, t);
          while (!is_op("}")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("}")) break;
            e->items.push_back(parse_expression(true));
            expect_op(":");
            e->items.push_back(parse_expression(true));
          }
          expect_op("}");
          return seal(std::move(e));
        }
        break;
      default: break;
    }
    error("unexpected " + describe(t) + " in an expression");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".") || is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj) {
    const Token at = next();
    if (at.text == ".") {
      const Token t = cur();
      if (t.kind == TokenKind::Name) {
        ++pos_;
        auto e = make(ExprKind::Attr, t);
        e->a = std::move(obj);
        e->name = t.text;
        return seal(std::move(e));
      }
      if (t.kind == TokenKind::Int) {
        ++pos_;
        auto e = make(ExprKind::Item, t);
        e->a = std::move(obj);
        e->b = make(ExprKind::Literal, t);
        const std::optional<int64_t> n = parse_decimal(t.text);
        if (!n) error("index '" + t.text + "' is too large", t);
        e->b->literal = Value::from(*n);
        return seal(std::move(e));
      }
      error("expected an attribute name after '.', got " + describe(t));
    }
    // [index], [a:b:c], or [a, b] (a tuple key)
    std::vector<ExprPtr> keys;
    bool tuple = false;
    while (!is_op("]")) {
      if (!keys.empty()) {
        expect_op(",");
        tuple = true;
        if (is_op("]")) break;
      }
      keys.push_back(parse_subscribed());
    }
    expect_op("]");
    if (keys.empty()) error("expected a subscript in '[]'", at);
    auto e = make(keys[0]->kind == ExprKind::Slice ? ExprKind::Slice : ExprKind::Item, at);
    if (tuple) {
      e->kind = ExprKind::Item;
      e->b = make(ExprKind::Tuple, at);
      e->b->items = std::move(keys);
    } else if (keys[0]->kind == ExprKind::Slice) {
      e = std::move(keys[0]);
    } else {
      e->b = std::move(keys[0]);
    }
    e->kind = e->kind == ExprKind::Slice ? ExprKind::Slice : ExprKind::Item;
    if (e->kind == ExprKind::Slice) {
      e->items.push_back(std::move(obj));  // the sliced value
    } else {
      e->a = std::move(obj);
    }
    if (e->b && e->b->kind == ExprKind::Tuple) e->b = seal(std::move(e->b));
    return seal(std::move(e));
  }

  // One subscript: an expression, or a slice with optional start, stop and step (a Slice node holding them
  // in a, b, c; the parent fills in the sliced value).
  ExprPtr parse_subscribed() {
    const Token at = cur();
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    auto s = make(ExprKind::Slice, at);
    s->a = std::move(start);
    ++pos_;  // ':'
    if (!is_op("]") && !is_op(",") && !is_op(":")) s->b = parse_expression(true);
    if (skip_op(":") && !is_op("]") && !is_op(",")) s->c = parse_expression(true);
    return seal(std::move(s));
  }

  void parse_args(ArgExprs& args) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (skip_op("*")) {
        args.star = parse_expression(true);
      } else if (skip_op("**")) {
        args.double_star = parse_expression(true);
      } else if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
        std::string name = next().text;
        ++pos_;
        args.keyword.emplace_back(std::move(name), parse_expression(true));
      } else {
        if (!args.keyword.empty()) error("a positional argument follows keyword arguments");
        args.positional.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr fn) {
    auto e = make(ExprKind::Call, cur());
    e->a = std::move(fn);
    parse_args(e->args);
    return seal(std::move(e));
  }

  std::string dotted_name(const char* what) {
    std::string name = expect_name(what);
    while (is_op(".") && peek().kind == TokenKind::Name) {
      pos_ += 1;
      name += "." + next().text;
    }
    return name;
  }

  ExprPtr parse_filter(ExprPtr input, bool start_with_pipe = true) {
    if (start_with_pipe) expect_op("|");
    const Token at = cur();
    auto e = make(ExprKind::Filter, at);
    e->name = dotted_name("a filter name");
    e->a = std::move(input);
    if (find_filter(e->name) == nullptr && !soft_) error("unknown filter '" + e->name + "'", at);
    if (is_op("(")) parse_args(e->args);
    return seal(std::move(e));
  }

  // `|a|b(x)` after {% set x %} or `a|b` after {% filter %}: Filter nodes whose input is the block's body.
  void parse_filter_chain(std::vector<ExprPtr>& chain, bool starts_with_pipe = true) {
    chain.push_back(parse_filter(nullptr, starts_with_pipe));
    while (is_op("|")) chain.push_back(parse_filter(nullptr));
  }

  ExprPtr parse_test(ExprPtr input) {
    ++pos_;  // 'is'
    const bool negated = skip_name("not");
    const Token at = cur();
    auto e = make(ExprKind::Test, at);
    e->name = dotted_name("a test name");
    e->a = std::move(input);
    if (find_test(e->name) == nullptr && !soft_) error("unknown test '" + e->name + "'", at);
    const Token& t = cur();
    if (is_op("(")) {
      parse_args(e->args);
    } else if ((t.kind == TokenKind::Name || t.kind == TokenKind::String || t.kind == TokenKind::Int ||
                t.kind == TokenKind::Float || (t.kind == TokenKind::Operator && (t.text == "(" || t.text == "[" || t.text == "{"))) &&
               !(t.kind == TokenKind::Name && (t.text == "else" || t.text == "or" || t.text == "and"))) {
      if (is_name("is")) error("tests cannot be chained with 'is'");
      e->args.positional.push_back(parse_postfix(parse_primary()));
    }
    e = seal(std::move(e));
    if (!negated) return e;
    auto n = make(ExprKind::Unary, at);
    n->name = "not";
    n->a = std::move(e);
    return seal(std::move(n));
  }

  static constexpr int kMaxNesting = 200;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int nesting_ = 0;  // expressions and blocks open around the current token
  int loop_depth_ = 0;
  bool soft_ = false;
  std::vector<std::set<std::string>*> name_sinks_;
};

}  // namespace

Template parse_template(std::string_view source) {
  return Parser(tokenize(normalize_source(source))).run();
}

}  // namespace strata::chat
