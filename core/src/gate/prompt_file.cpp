// `strata gate --prompts FILE`: a JSON array of {"name", "text"} objects, checked strictly so that a typo in a
// key or a repeated name is an error instead of a silently different prompt set.
#include <nlohmann/json.hpp>
#include <set>

#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "text_file.hpp"

namespace strata::gate {
namespace {

const char* const kFormatHint = "a prompt file is a JSON array of {\"name\": \"...\", \"text\": \"...\"} objects";

}  // namespace

std::vector<Prompt> parse_prompts(std::string_view json, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(source + ": not valid JSON (byte " + std::to_string(e.byte) + "); " + kFormatHint);
  }
  if (!doc.is_array()) throw Error(source + ": the top level is not an array; " + kFormatHint);
  if (doc.empty()) throw Error(source + ": the array is empty; give at least one prompt");
  std::vector<Prompt> prompts;
  std::set<std::string> names;
  for (size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& entry = doc[i];
    const std::string where = source + ": entry " + std::to_string(i);
    if (!entry.is_object()) throw Error(where + " is not an object; " + kFormatHint);
    for (const auto& [key, value] : entry.items()) {
      if (key != "name" && key != "text")
        throw Error(where + ": unknown key '" + key + "' (only \"name\" and \"text\" are read)");
      if (!value.is_string()) throw Error(where + ": \"" + key + "\" is not a string");
    }
    if (!entry.contains("name")) throw Error(where + " has no \"name\"");
    if (!entry.contains("text")) throw Error(where + " has no \"text\"");
    Prompt p{entry["name"].get<std::string>(), entry["text"].get<std::string>()};
    if (p.name.empty()) throw Error(where + ": \"name\" is empty; every prompt needs a name to be reported by");
    if (!names.insert(p.name).second)
      throw Error(where + ": the name '" + p.name + "' is used twice; names must be unique");
    prompts.push_back(std::move(p));
  }
  return prompts;
}

std::vector<Prompt> read_prompts(const std::string& path) {
  return parse_prompts(read_text_file(path, "the prompt file"), path);
}

}  // namespace strata::gate
