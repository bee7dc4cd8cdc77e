// Where plugins are looked for, and in which order.
#include <sstream>

#include "strata/executable.hpp"
#include "strata/plugin_host.hpp"

namespace strata {

PluginSearchPath default_search_path(const std::vector<std::filesystem::path>& config_folders,
                                     const std::string& env_plugin_path) {
  PluginSearchPath p;
  auto add = [&p](const std::filesystem::path& folder, const std::string& origin) {
    if (folder.empty()) return;
    const std::filesystem::path norm = folder.lexically_normal();
    for (const auto& f : p.folders) {
      if (f == norm) return;  // examined once, at its first (highest-priority) place
    }
    p.folders.push_back(norm);
    p.origins.push_back(origin);
  };
  for (const auto& f : config_folders) add(f, "config plugin_path");
  add(STRATA_BUILD_PLUGIN_DIR, "build plugin folder");
  add(executable_folder(), "executable folder");
  std::stringstream ss(env_plugin_path);
  std::string item;
  while (std::getline(ss, item, ':')) add(item, "STRATA_PLUGIN_PATH");
  return p;
}

}  // namespace strata
