#include "schema.hpp"

namespace strata::config {
namespace {

// "plugins.*.*" -> "plugins.<name>.<option>": the wildcards as a reader would name them.
std::string readable_path(std::string_view pattern) {
  std::vector<std::string> parts = split_path(pattern);
  bool first_wildcard = true;
  for (std::string& p : parts) {
    if (p != "*") continue;
    p = first_wildcard ? "<name>" : "<option>";
    first_wildcard = false;
  }
  return join_path(parts);
}

std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

const char* const kNotSet = "(not set)";

std::string default_of(const Key& key) {
  if (!key.default_text.empty()) return std::string(key.default_text);
  if (key.type == Type::PathList) return "[]";
  if (key.optional) return kNotSet;
  return "";
}

std::string default_cell(const std::string& text) {
  if (text.empty() || text == kNotSet) return text;
  return "`" + cell(text) + "`";
}

}  // namespace

std::vector<KeyReference> reference() {
  std::vector<KeyReference> rows;
  for (const Key& key : schema())
    rows.push_back({readable_path(key.path), describe_type(key), default_of(key), std::string(key.doc)});
  return rows;
}

std::string reference_markdown() {
  std::string out =
      "Launch keys (`configs/*.yaml`). Precedence, lowest first: default, the YAML file, the environment "
      "switches, `-o key.path=value`. Relative paths in a file resolve against the file's folder.\n\n"
      "| key | type | default | description |\n| --- | --- | --- | --- |\n";
  for (const KeyReference& row : reference())
    out += "| `" + cell(row.key) + "` | " + cell(row.type) + " | " + default_cell(row.default_text) +
           " | " + cell(row.doc) + " |\n";
  out +=
      "\nEnvironment switches (an empty value counts as unset; STRATA_PLUGIN_PATH is ':'-separated):\n\n"
      "| variable | sets |\n| --- | --- |\n";
  for (const EnvSwitch& s : environment_switches()) out += "| `" + s.variable + "` | `" + s.key + "` |\n";
  out +=
      "\nByte sizes: a number with an optional fraction and unit: B, KiB, MiB, GiB, TiB (powers of 1024) or "
      "KB, MB, GB, TB (powers of 1000), e.g. `8GiB`, `1.5GB`, `1000000`; the result must be a whole number of "
      "bytes. Booleans: true/false, yes/no, on/off, 1/0.\n";
  return out;
}

}  // namespace strata::config
