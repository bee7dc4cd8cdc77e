// The three layers applied over the defaults, in precedence order: the launch file, the STRATA_* environment
// switches, the -o overrides. Each checks its own syntax and hands values to assign.hpp.
#pragma once

#include <filesystem>
#include <string>

#include <yaml-cpp/exceptions.h>

#include "builder.hpp"
#include "strata/config.hpp"

namespace strata::config {

// Why yaml-cpp refused a text, in words a user can act on: its own message, but where nesting passed its depth
// limit, which it calls "bad file".
std::string yaml_refusal(const YAML::Exception& e);

// YAML syntax, one document, a map at the top level; relative paths resolve against the file's folder.
void apply_file(Builder& builder, const std::filesystem::path& file);

// The switches of environment_switches() that are set and not empty; warns about STRATA_* variables that look
// like a misspelt switch.
void apply_environment(Builder& builder, const Environment& env);

// `key.path=value` strings; the value is read as YAML (a scalar, or a list or map for lists and sections).
void apply_overrides(Builder& builder, const Overrides& overrides);

// After all layers: contradictions between keys, then files and folders that do not exist.
void check_conflicts(Builder& builder);
void check_files(Builder& builder);

}  // namespace strata::config
