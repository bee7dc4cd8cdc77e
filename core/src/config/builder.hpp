// A launch under construction: the values set so far, where each came from (for provenance and for placing
// later diagnostics, such as a missing file, at the value that named it), and the diagnostics found.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/mark.h>

#include "strata/config.hpp"

namespace strata::config {

// One origin of values: the launch file, one environment switch or one -o override.
struct Source {
  enum class Kind { File, Environment, Override };
  Kind kind = Kind::File;
  std::string name;             // the file as the user named it, the variable, or the -o text ("key=value")
  std::filesystem::path base;   // folder that relative paths resolve against
  size_t order = 0;             // position among sources of its kind (environment table order, -o order)
};

// A position a diagnostic can point at.
struct Where {
  std::string origin;  // "FILE:LINE:COLUMN", "environment VAR", "-o key=value"
  int line = 0;
  int column = 0;
  int source_rank = 0;  // file, then environment, then -o
  size_t order = 0;
  Provenance provenance;
};

Where where(const Source& source, const YAML::Mark& mark);
Where where(const Source& source);  // the source as a whole (no position)

class Builder {
 public:
  Launch launch;

  void error(Diagnostic::Kind kind, const Where& at, std::string message);
  void warning(const Where& at, std::string message);

  // Record that `key` now holds a value from `at` (a later source replaces an earlier one).
  void set_origin(const std::string& key, const Where& at);
  const Where* origin_of(const std::string& key) const;
  // For list values (plugin_path): where each element came from.
  std::map<std::string, std::vector<Where>> element_origins;

  PluginEntry& plugin(const std::string& name);  // created (enabled, from defaults) on first mention

  // Sorted: kind (syntax and schema, conflicts, missing files, then warnings), then source, then position.
  std::vector<Diagnostic> diagnostics() const;
  bool has_errors() const;

 private:
  struct Problem {
    Diagnostic diagnostic;
    int source_rank = 0;
    size_t order = 0;
    size_t seq = 0;
  };
  std::vector<Problem> problems_;
  std::map<std::string, Where> origins_;
};

}  // namespace strata::config
