// Assigning YAML values to a launch through the schema. This is the one place values are checked, whether they
// come from the file, an environment switch or -o: same types, same ranges, same messages.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "builder.hpp"
#include "schema.hpp"

namespace strata::config {

// Every pair of a map, under `prefix` (empty = the top level).
void assign_map(Builder& builder, const Source& source, const std::vector<std::string>& prefix, const YAML::Node& map);

// One key: `path` may name a section (the value is then a map), a value, or a plugin option at any depth
// (plugins.cuda.a.b). `key_mark` is where the key was written (null for -o and the environment).
void assign_key(Builder& builder, const Source& source, const std::vector<std::string>& path,
                const YAML::Node& value, const YAML::Mark& key_mark);

// Parses `text` as a value of `key` and stores it in `launch`; returns what is wrong ("" when it was stored).
// Relative paths resolve against `base`.
std::string store_text(Launch& launch, const Key& key, std::string_view text, const std::filesystem::path& base);

}  // namespace strata::config
