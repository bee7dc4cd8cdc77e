// Choosing the launch's backend.
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"

namespace strata {
namespace {

std::vector<std::string> options_of(const config::Launch& launch, const std::string& name) {
  const config::PluginEntry* entry = launch.plugin(name);
  return entry ? entry->flattened() : std::vector<std::string>{};
}

bool disabled(const config::Launch& launch, const std::string& name) {
  const config::PluginEntry* entry = launch.plugin(name);
  return entry != nullptr && !entry->enabled;
}

}  // namespace

std::unique_ptr<Backend> select_backend(const config::Launch& launch, const PluginRegistry& registry) {
  if (launch.backend == "reference") return make_reference_backend();
  std::string name = launch.backend;
  if (name == "auto") {
    std::vector<std::string> allowed;
    for (const PluginCandidate& c : registry.candidates()) {
      if (c.verdict == PluginCandidate::Verdict::Usable && c.kind == STRATA_KIND_BACKEND && !disabled(launch, c.name)) {
        allowed.push_back(c.name);
      }
    }
    if (allowed.empty()) {
      log::info("backend auto: no usable backend plugin was found; running on the reference backend");
      return make_reference_backend();
    }
    name = registry.best_backend(allowed);
  } else if (disabled(launch, name)) {
    throw Error("backend '" + name + "' is disabled by plugins." + name + ".enabled; enable it or choose another");
  }
  return make_plugin_backend(registry.instantiate(name, options_of(launch, name)));
}

}  // namespace strata
