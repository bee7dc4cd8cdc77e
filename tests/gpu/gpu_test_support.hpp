// What the GPU test files share: the build's plugin registry and the usable GPU backend's name.
#pragma once

#include <string>

#include "strata/plugin_host.hpp"

namespace strata::gpu_tests {

const PluginRegistry& plugins();
// The usable GPU backend plugin (cuda or hip), or "" with the reason in `why`.
std::string gpu_backend(std::string& why);

}  // namespace strata::gpu_tests
