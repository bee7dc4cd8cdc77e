// Python's str operations that filters and methods share: strip, split, splitlines, case changes (Latin,
// Greek, Cyrillic, Armenian), and str.format.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "value.hpp"

namespace strata::chat {

// Python's character classes (str.isspace, isalpha, isdecimal, isnumeric, isalnum, isprintable) by Unicode
// general category, from the tokenizer's Unicode tables.
bool py_isspace(char32_t c);
bool py_isalpha(char32_t c);
bool py_isdecimal(char32_t c);
bool py_isnumeric(char32_t c);
bool py_isalnum(char32_t c);
bool py_isprintable(char32_t c);
// str.strip/lstrip/rstrip: `chars` null strips whitespace.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split(sep, maxsplit): sep null splits on runs of whitespace; rsplit from the right.
std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);  // first character upper, the rest lower
std::string py_title(const std::string& s);       // str.title()
bool py_is_cased(char32_t c);
bool py_is_upper_char(char32_t c);
bool py_is_lower_char(char32_t c);
std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count);
int64_t py_find(const std::string& s, const std::string& sub, bool from_right);  // in code points; -1 if absent
int64_t py_count(const std::string& s, const std::string& sub);
std::string html_escape(const std::string& s);

// str.format(*args, **kwargs): fields {}, {0}, {name}, {x.attr}, {x[key]}, !r/!s, and format specs.
std::string py_format(const std::string& format, const CallArgs& args);
// format(value, spec): fill, align, sign, width, precision, and types s d f e g x o b %.
std::string format_spec(const Value& v, const std::string& spec);

}  // namespace strata::chat
