// The schema of a launch: every key with its type, limits, default and one line of documentation, in one table
// (schema.cpp). Loading, overrides, defaults, rendering and the reference all read this table.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "strata/config.hpp"

namespace strata::config {

enum class Type {
  Section,       // a map of further keys
  PluginTable,   // `plugins`: a map from plugin name to PluginSection
  PluginSection, // `plugins.<name>`: `enabled` plus the plugin's own options
  PluginOption,  // `plugins.<name>.<anything>`: flattened to strings, checked by the plugin
  String,
  Path,          // a string; relative paths resolve against the launch file's folder
  PathList,      // a path or a list of paths
  Bool,
  Int,
  Float,
  Enum,
  ByteSize,
  CacheSize,     // `auto`, a percentage or a byte size
  FloatOrAuto,   // `auto` or a float
};

struct IntRange {
  int64_t lo = std::numeric_limits<int32_t>::min();
  int64_t hi = std::numeric_limits<int32_t>::max();
};

struct FloatRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;  // true: lo itself is excluded
};

// Where a key's value lives in a Launch (plugin keys have none: they are stored by name).
using Field = std::variant<std::monostate, std::string*, std::optional<std::string>*, std::vector<std::string>*,
                           bool*, int*, int64_t*, double*, std::optional<double>*, uint64_t*, CacheSize*,
                           CachePolicy*, KvType*, DraftKind*, HostCopy*>;

struct Key {
  std::string_view path;          // dotted; `*` stands for any one component ("plugins.*.enabled")
  Type type = Type::String;
  std::string_view default_text;  // parsed like a user's value; "" with `optional` = not set
  std::string_view doc;
  IntRange ints{};
  FloatRange floats{};
  std::vector<std::string_view> choices{};  // Type::Enum, in the order of the C++ enum
  bool optional = false;          // may be unset (null)
  bool secret = false;            // rendered as "<redacted>"
  Field (*field)(Launch&) = nullptr;
};

// The table, in the order keys are rendered.
const std::vector<Key>& schema();

// The key matching a dotted path (exact components preferred over `*`), or nullptr.
const Key* find_key(const std::vector<std::string>& path);

// Direct children of a section pattern ("" = top level), excluding wildcards: for listing and suggestions.
std::vector<std::string> child_names(std::string_view section_pattern);

// What a value must look like, for messages: "an integer >= 16", "a number 0..1", "true or false", ...
std::string expected_text(const Key& key);

// Full dotted paths of every non-section key whose last component is `word` (for "did you mean" across sections).
std::vector<std::string> keys_named(std::string_view word);

// The limits of an Int, Float or FloatOrAuto key: ">= 16", "0..1", "> 0"; "" when unbounded.
std::string range_text(const Key& key);

// A short description of the accepted values: "int >= 16", "float 0..1", "one of: lru, lfu", ...
std::string describe_type(const Key& key);

std::string join_path(const std::vector<std::string>& path);
std::vector<std::string> split_path(std::string_view dotted);

}  // namespace strata::config
