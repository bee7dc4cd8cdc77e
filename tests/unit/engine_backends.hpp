// The backends the end-to-end tests run on: the reference, and every backend plugin built next to the tests
// that is usable on this machine. A test iterates over all of them and fails if none ran.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/engine.hpp"
#include "strata/model.hpp"
#include "strata/plugin_host.hpp"

namespace strata::test {

inline std::string models_dir() { return std::string(STRATA_SOURCE_DIR) + "/models"; }

inline const PluginRegistry& built_plugins() {
  static const PluginRegistry registry([] {
    PluginSearchPath p;
    p.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
    p.origins.push_back("build");
    return p;
  }());
  return registry;
}

inline std::vector<std::string> backends_under_test() {
  std::vector<std::string> names = {"reference"};
  for (const PluginCandidate& c : built_plugins().candidates()) {
    if (c.verdict == PluginCandidate::Verdict::Usable && c.kind == STRATA_KIND_BACKEND) names.push_back(c.name);
  }
  return names;
}

inline std::unique_ptr<Backend> open_backend(const std::string& name) {
  if (name == "reference") return make_reference_backend();
  return make_plugin_backend(built_plugins().instantiate(name));
}

// Test engines hold 512 positions unless told otherwise.
inline EngineSettings test_settings() {
  EngineSettings s;
  s.context = 512;
  return s;
}

inline std::unique_ptr<Engine> open_engine(const std::string& model_path, const std::string& backend,
                                           const EngineSettings& settings = test_settings()) {
  return std::make_unique<Engine>(Model::load(model_path), open_backend(backend), settings);
}

}  // namespace strata::test
