// The renderer's errors: each names the construct and the line (and column) of the template where it is.
#include <gtest/gtest.h>

#include <string>

#include "error_text.hpp"
#include "strata/chat_template.hpp"

namespace {

using strata::chat::ChatTemplate;
using strata::chat::TemplateError;

std::string parse_error(const std::string& source) {
  return strata::test::error_of([&] { ChatTemplate t(source); });
}

std::string render_error(const std::string& source, const char* context = "{}") {
  const ChatTemplate t(source);
  return strata::test::error_of([&] { t.render(nlohmann::ordered_json::parse(context)); });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ChatTemplateErrors, UnsupportedConstructNamesItAndItsLine) {
  const std::string e = parse_error("{% if true %}\nok\n{% endif %}\n  {% include 'header.jinja' %}");
  EXPECT_TRUE(contains(e, "'{% include %}'")) << e;
  EXPECT_TRUE(contains(e, "line 4, column 6")) << e;
  EXPECT_TRUE(contains(parse_error("{% extends 'base.jinja' %}"), "'{% extends %}'"));
  EXPECT_TRUE(contains(parse_error("x\n{% import 'm.jinja' as m %}"), "line 2"));
}

TEST(ChatTemplateErrors, UnclosedBlockNamesTheOpeningTag) {
  const std::string e = parse_error("{% for m in messages %}\n{% if m %}\n{{ m }}\n{% endfor %}");
  EXPECT_TRUE(contains(e, "'{% endfor %}' does not close the innermost open block, 'if' (opened at line 2)")) << e;
  EXPECT_TRUE(contains(e, "line 4")) << e;
  const std::string open = parse_error("a\n{% if true %}\nnever closed");
  EXPECT_TRUE(contains(open, "unclosed 'if' block (opened at line 2)")) << open;
}

TEST(ChatTemplateErrors, UnknownFilterAndTest) {
  const std::string e = parse_error("line one\n{{ messages|frobnicate }}");
  EXPECT_TRUE(contains(e, "unknown filter 'frobnicate'")) << e;
  EXPECT_TRUE(contains(e, "line 2, column 13")) << e;
  EXPECT_TRUE(contains(parse_error("{% for m in x %}{{ m is weird }}{% endfor %}"), "unknown test 'weird'"));
  // Inside an if jinja2 reports it only when reached: the branch not taken renders.
  EXPECT_EQ(ChatTemplate("{% if false %}{{ x|frobnicate }}{% endif %}ok").render(nlohmann::json::object()), "ok");
  EXPECT_TRUE(contains(render_error("{% if true %}{{ x|frobnicate }}{% endif %}"),
                       "TemplateRuntimeError: No filter named 'frobnicate' found."));
  EXPECT_TRUE(contains(render_error("{% if true %}{{ x is weird }}{% endif %}"),
                       "TemplateRuntimeError: No test named 'weird' found."));
}

TEST(ChatTemplateErrors, UnknownTagAndStrayEnd) {
  EXPECT_TRUE(contains(parse_error("{% frobnicate %}"), "unknown tag '{% frobnicate %}'"));
  EXPECT_TRUE(contains(parse_error("{% endif %}"), "without its opening tag"));
  EXPECT_TRUE(contains(parse_error("{% break %}"), "'break' outside a for loop"));
}

TEST(ChatTemplateErrors, SyntaxErrorsCarryTheirPosition) {
  EXPECT_TRUE(contains(parse_error("{{ 'unclosed }}"), "unclosed string literal"));
  EXPECT_TRUE(contains(parse_error("{{ 1 + }}"), "unexpected end of print statement"));
  EXPECT_TRUE(contains(parse_error("{# no end"), "unclosed comment"));
  EXPECT_TRUE(contains(parse_error("ok\n\n{{ (1, 2 }}"), "line 3"));
  try {
    ChatTemplate t("\n\n   {{ a b }}");
    FAIL() << "parsed";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 9);
  }
}

TEST(ChatTemplateErrors, RuntimeErrorsAsPythonRaisesThem) {
  EXPECT_TRUE(contains(render_error("{{ x.y }}"), "UndefinedError: 'x' is undefined"));
  EXPECT_TRUE(contains(render_error("\n{{ d.q.r }}", R"({"d": {}})"), "'dict object' has no attribute 'q'"));
  EXPECT_TRUE(contains(render_error("{{ 'a' < 1 }}"), "TypeError: '<' not supported between instances of 'str' and 'int'"));
  EXPECT_TRUE(contains(render_error("{% set _ = l.append(1) %}", R"({"l": []})"),
                       "SecurityError: access to attribute 'append' of 'list' object is unsafe."));
  EXPECT_TRUE(contains(render_error("{{ x|tojson }}"), "Object of type Undefined is not JSON serializable"));
  EXPECT_TRUE(contains(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "takes not more than 1 argument"));
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesTheTemplatesMessageAndLine) {
  const std::string e = render_error("{% if messages[0].role == 'system' %}\n{{ raise_exception('No system messages!') }}{% endif %}",
                                     R"({"messages": [{"role": "system", "content": "x"}]})");
  EXPECT_TRUE(contains(e, "No system messages!")) << e;
  EXPECT_TRUE(contains(e, "line 2")) << e;
}

TEST(ChatTemplateErrors, ErrorInAMacroPointsIntoItsBody) {
  const std::string e = render_error("{% macro m() %}\n\n{{ undefined_thing.attr }}{% endmacro %}{{ m() }}");
  EXPECT_TRUE(contains(e, "line 3")) << e;
}

TEST(ChatTemplateErrors, ContextMustBeAnObject) {
  const ChatTemplate t("x");
  EXPECT_THROW(t.render(nlohmann::json::array()), TemplateError);
}

}  // namespace
