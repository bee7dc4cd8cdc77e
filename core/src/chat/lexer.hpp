// Splits a template into text and the tokens inside {{ }} and {% %}, applying jinja2's whitespace rules as
// transformers configures them: `-` strips all whitespace on its side, `+` keeps it, trim_blocks drops the
// newline after a block or comment tag, lstrip_blocks drops the spaces and tabs before one on its line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::chat {

enum class TokenKind { Text, PrintBegin, PrintEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Operator, End };

struct Token {
  TokenKind kind;
  std::string text;  // Text: the bytes to print; String: the unescaped value; others: as written
  int line = 1, column = 1;
};

// Throws TemplateError (an unclosed tag or comment, a character no token starts with).
std::vector<Token> tokenize(std::string_view source);

// jinja2 normalizes newlines (\r\n and \r become \n) and drops one trailing newline before lexing.
std::string normalize_source(std::string_view source);

}  // namespace strata::chat
