// `strata gate --prompts FILE`: a JSON array of {"name", "text"} objects, checked strictly so that a typo in a
// key or a repeated name is an error instead of a silently different prompt set.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "strata/vision.hpp"
#include "text_file.hpp"

namespace strata::gate {
namespace {

const char* const kFormatHint =
    "a prompt file is a JSON array of {\"name\": \"...\", \"text\": \"...\"} objects (and \"images\": [...] for a "
    "vision model)";

}  // namespace

std::vector<Prompt> parse_prompts(std::string_view json, const std::string& source, const std::string& folder) {
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
      if (key == "images") {
        if (!value.is_array() || value.empty()) throw Error(where + ": \"images\" is not a non-empty array of strings");
        for (const auto& im : value) {
          if (!im.is_string() || im.get<std::string>().empty())
            throw Error(where + ": \"images\" holds " + im.dump().substr(0, 40) + ", not an image file or data URL");
        }
        continue;
      }
      if (key != "name" && key != "text")
        throw Error(where + ": unknown key '" + key + "' (only \"name\", \"text\" and \"images\" are read)");
      if (!value.is_string()) throw Error(where + ": \"" + key + "\" is not a string");
    }
    if (!entry.contains("name")) throw Error(where + " has no \"name\"");
    if (!entry.contains("text")) throw Error(where + " has no \"text\"");
    Prompt p{entry["name"].get<std::string>(), entry["text"].get<std::string>(), {}};
    if (entry.contains("images")) {
      for (const auto& im : entry["images"]) {
        std::string path = im.get<std::string>();
        // Files are relative to the prompt file's folder; data URLs and the built-in picture stay as they are.
        if (!vision::is_data_url(path) && path != kBuiltinImage && !folder.empty() &&
            std::filesystem::path(path).is_relative()) {
          path = (std::filesystem::path(folder) / path).string();
        }
        p.images.push_back(std::move(path));
      }
    }
    if (p.name.empty()) throw Error(where + ": \"name\" is empty; every prompt needs a name to be reported by");
    if (!names.insert(p.name).second)
      throw Error(where + ": the name '" + p.name + "' is used twice; names must be unique");
    prompts.push_back(std::move(p));
  }
  return prompts;
}

std::vector<Prompt> read_prompts(const std::string& path) {
  return parse_prompts(read_text_file(path, "the prompt file"), path,
                       std::filesystem::absolute(path).parent_path().string());
}

}  // namespace strata::gate
