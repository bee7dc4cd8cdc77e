// Chat templates: the Jinja subset (in practice all of it but template inheritance) that Hugging Face chat
// templates use, rendered the way transformers renders them: Python jinja2's sandboxed environment with
// trim_blocks and lstrip_blocks on, the loopcontrols extension (break/continue), transformers' `generation`
// tag, its `tojson` (ensure_ascii=False, indent, separators, sort_keys) and its `raise_exception` and
// `strftime_now` globals. The output is byte for byte what jinja2 gives for the same template and data
// (tests/template/ checks every template of tests/data/templates against it).
//
// What is left out, each a TemplateError naming it and its line: {% extends %}, {% include %}, {% import %},
// {% autoescape %} and extension tags; the filters random, groupby, pprint, urlize, urlencode, wordwrap,
// filesizeformat and xmlattr. Python's arbitrary-precision integers are 64-bit here (past that: float); case
// changes cover Latin, Greek, Cyrillic and Armenian. A render is bounded (10 million loop iterations, nesting
// 2000 deep, sizes of 256 MiB) so that no template runs away with a server.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "strata/error.hpp"

namespace strata::chat {

// A template that does not parse, or fails while rendering (an undefined value used, a type error,
// raise_exception). The message names the construct and "line N, column C" of the template.
class TemplateError : public Error {
 public:
  TemplateError(const std::string& message, int line, int column);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_, column_;
};

struct Template;  // the parsed form (core/src/chat/ast.hpp)

class ChatTemplate {
 public:
  explicit ChatTemplate(std::string source);  // parses once; throws TemplateError
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // Renders with `context` (a JSON object) as the globals: messages, tools, add_generation_prompt, bos_token,
  // eos_token and any extra variables (transformers passes tools=None and documents=None when there are none).
  // Thread-safe: a parsed template may be rendered by several threads at once. `now` fixes strftime_now (unset: the system clock, local time).
  // Python dicts keep their keys' order, and templates print them (tool schemas through tojson, `items()`): pass an
  // ordered_json to keep the request's order; a plain json's keys come sorted.
  std::string render(const nlohmann::json& context,
                     std::optional<std::chrono::system_clock::time_point> now = std::nullopt) const;
  std::string render(const nlohmann::ordered_json& context,
                     std::optional<std::chrono::system_clock::time_point> now = std::nullopt) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::unique_ptr<Template> parsed_;
};

// The ChatML template used when a model has no tokenizer.chat_template: each message as
// "<|im_start|>ROLE\nCONTENT<|im_end|>\n", then "<|im_start|>assistant\n" when add_generation_prompt is set.
std::string_view chatml_fallback_template();

}  // namespace strata::chat
