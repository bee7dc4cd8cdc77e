#include "launch_options.hpp"

namespace strata::cli {

std::vector<std::string> LaunchContext::plugin_options(const std::string& name) const {
  const config::PluginEntry* e = launch.plugin(name);
  return e != nullptr ? e->flattened() : std::vector<std::string>{};
}

void LaunchOptions::declare(ArgParser& p) {
  p.option("-c|--config", "FILE", "the YAML launch", &config_file_);
  p.repeated("-o|--override", "KEY=VALUE", "set a launch key, e.g. -o runtime.context=8192", &overrides_);
}

LaunchContext LaunchOptions::resolve(bool require_file) const {
  if (require_file && config_file_.empty()) throw UsageError("a launch is needed: --config FILE");
  return resolve_or({});
}

LaunchContext LaunchOptions::resolve_or(const std::filesystem::path& default_file) const {
  LaunchContext ctx;
  const std::filesystem::path file = config_file_.empty() ? default_file : std::filesystem::path(config_file_);
  ctx.launch = config::load(file, config::process_environment(), overrides_);
  for (const auto& f : ctx.launch.plugin_path) ctx.plugin_folders.emplace_back(f);
  return ctx;
}

}  // namespace strata::cli
