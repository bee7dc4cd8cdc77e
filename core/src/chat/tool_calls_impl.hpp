// Shared pieces of the tool-call parsers: the calls found, and helpers to cut text and read JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::chat::tool_calls {

struct Call {
  std::string name;
  nlohmann::ordered_json arguments;  // an object (or, where the model wrote one, any JSON value)
  std::string id;                    // empty: one is made up
};

// What a family's parser found: the text left for `content` and the calls, or nullopt when a call block is
// malformed (the reply is then given back as plain content).
struct Split {
  std::string content;
  std::vector<Call> calls;
  std::string reasoning;  // for families that mark reasoning their own way (Cohere's <|START_THINKING|>)
};

// A reply without calls: all of it is content.
inline Split plain_text(std::string text) {
  Split s;
  s.content = std::move(text);
  return s;
}

std::optional<Split> parse_json_families(int format, std::string_view text);  // ToolCallFormat as int
std::optional<Split> parse_xml_families(int format, std::string_view text);
std::optional<Split> parse_harmony(std::string_view text, std::string* reasoning);

std::string_view trim(std::string_view s);
// The length of the JSON object or array that starts at s[0] (strings and escapes respected), or 0.
size_t json_extent(std::string_view s);
std::optional<nlohmann::ordered_json> parse_json(std::string_view s);
// A parameter written as text: JSON when it parses as JSON, else the text as a string.
nlohmann::ordered_json loose_value(std::string_view s);

}  // namespace strata::chat::tool_calls
