// Choosing the launch's backend.
#include <algorithm>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"

namespace strata {
namespace {

bool disabled(const config::Launch& launch, const std::string& name) {
  const config::PluginEntry* entry = launch.plugin(name);
  return entry != nullptr && !entry->enabled;
}

}  // namespace

std::vector<std::string> backend_options(const config::Launch& launch, const std::string& name) {
  const config::PluginEntry* entry = launch.plugin(name);
  std::vector<std::string> options = entry ? entry->flattened() : std::vector<std::string>{};
  // runtime.canonical_double: the plugin's own canonical_double entry, when the launch has one, is left as it is.
  const bool own = std::any_of(options.begin(), options.end(),
                               [](const std::string& o) { return o.rfind("canonical_double=", 0) == 0; });
  if (launch.runtime.canonical_double && !own) options.push_back("canonical_double=true");
  return options;
}

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
  return make_plugin_backend(registry.instantiate(name, backend_options(launch, name)));
}

}  // namespace strata
