// The public face of the renderer: parse once, render with a JSON context.
#include "strata/chat_template.hpp"

#include "ast.hpp"
#include "interpreter.hpp"
#include "json_value.hpp"
#include "parser.hpp"

namespace strata::chat {
namespace {

std::string located(const std::string& message, int line, int column) {
  return "chat template line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

template <typename J>
std::string render_with(const Template& t, const J& context, std::optional<std::chrono::system_clock::time_point> now) {
  if (!context.is_object()) throw TemplateError("the render context must be a JSON object", 0, 0);
  const ContainerArena arena;  // declared first: it outlives every value of this render
  Value globals;
  try {
    globals = from_json(context);
  } catch (const EvalError& e) {
    throw TemplateError(e.what(), 0, 0);
  }
  Interpreter in(std::move(globals), now);
  return in.render(t);
}

}  // namespace

TemplateError::TemplateError(const std::string& message, int line, int column)
    : Error(line > 0 ? located(message, line, column) : message), line_(line), column_(column) {}

ChatTemplate::ChatTemplate(std::string source)
    : source_(std::move(source)), parsed_(std::make_unique<Template>(parse_template(source_))) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::json& context,
                                 std::optional<std::chrono::system_clock::time_point> now) const {
  return render_with(*parsed_, context, now);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context,
                                 std::optional<std::chrono::system_clock::time_point> now) const {
  return render_with(*parsed_, context, now);
}

std::string_view chatml_fallback_template() {
  return "{% for message in messages %}"
         "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
         "{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

}  // namespace strata::chat
