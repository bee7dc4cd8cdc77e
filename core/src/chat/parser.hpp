// Parses a template's tokens into statements and expressions with jinja2's grammar and operator precedence.
#pragma once

#include <string_view>

#include "ast.hpp"

namespace strata::chat {

// Throws TemplateError naming the construct and its line: a syntax error, an unclosed block, a tag this
// renderer does not implement ({% include %}...), a filter or test that does not exist.
Template parse_template(std::string_view source);

}  // namespace strata::chat
