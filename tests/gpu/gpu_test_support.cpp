#include "gpu_test_support.hpp"

namespace strata::gpu_tests {

const PluginRegistry& plugins() {
  static const PluginRegistry registry([] {
    PluginSearchPath p;
    p.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
    p.origins.push_back("build");
    return p;
  }());
  return registry;
}

std::string gpu_backend(std::string& why) {
  why = "no GPU backend plugin in " + std::string(STRATA_BUILD_PLUGIN_DIR);
  for (const PluginCandidate& c : plugins().candidates()) {
    if (c.kind != STRATA_KIND_BACKEND || (c.name != "cuda" && c.name != "hip")) continue;
    if (c.verdict == PluginCandidate::Verdict::Usable) return c.name;
    why = c.name + ": " + c.reason;
  }
  return "";
}

}  // namespace strata::gpu_tests
