// DeviceQueues over a backend plugin's 1.2 members (streams, events, async copies, host registration).
#pragma once

#include <memory>

#include "strata/device_queues.hpp"
#include "strata/plugin_host.hpp"

namespace strata {

// Null when the plugin's table has no 1.2 members (an older plugin, or a backend that addresses host memory).
std::unique_ptr<DeviceQueues> make_plugin_queues(PluginInstance& plugin, const strata_backend_v1& table);

}  // namespace strata
