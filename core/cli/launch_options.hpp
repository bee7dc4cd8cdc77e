// The options every command that takes a launch shares: --config FILE and -o KEY=VALUE, resolved into the
// effective launch (defaults < YAML < STRATA_* environment < -o).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "args.hpp"
#include "strata/config.hpp"

namespace strata::cli {

struct LaunchContext {
  config::Launch launch;
  std::vector<std::filesystem::path> plugin_folders;  // the launch's plugin_path
  // The plugin's options as "key=value" strings, from its section of the launch (none when absent).
  std::vector<std::string> plugin_options(const std::string& name) const;
};

class LaunchOptions {
 public:
  void declare(ArgParser& p);
  // Loads the launch; without --config, the defaults with the environment and -o applied (or, when
  // require_file, a UsageError).
  LaunchContext resolve(bool require_file) const;
  // The same with `default_file` as the launch when --config is not given.
  LaunchContext resolve_or(const std::filesystem::path& default_file) const;
  const std::string& config_file() const { return config_file_; }
  const std::vector<std::string>& overrides() const { return overrides_; }

 private:
  std::string config_file_;
  std::vector<std::string> overrides_;
};

}  // namespace strata::cli
