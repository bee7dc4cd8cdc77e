// Where a window's ops run: the in-core reference (always there), or a backend plugin (plugin_api.h's backend
// family), chosen by a launch's `backend` key. The engine sees both through one interface.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "strata/config.hpp"
#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"
#include "strata/plugin_api.h"

namespace strata {

class PluginInstance;
class PluginRegistry;

class Backend {
 public:
  virtual ~Backend() = default;
  // "reference", "cpu_avx2", ...
  virtual const std::string& name() const = 0;
  // A line for logs and summaries: the name, and the device where there is one.
  virtual std::string describe() const = 0;
  // Runs the ops in order; returns once all are done. Throws strata::Error when the backend fails.
  virtual void compute(std::span<const strata_op> ops) = 0;
  // The device memory ops must address, or null when they take host memory (the reference, cpu_avx2).
  virtual DeviceMemory* device_memory() { return nullptr; }
  // Streams, events and host registration (backend 1.2), or null when the backend has none.
  virtual DeviceQueues* device_queues() { return nullptr; }
  // Whether compute() runs `op` itself (a plugin's supports_op; the reference runs everything).
  virtual bool supports(const strata_op& op) { return op.kind != 0; }
  // This instance's identity for caches made for it (device copies of weights): unlike its address, which a
  // backend made later may reuse, no other instance shares it, and it expires when this one is destroyed.
  std::weak_ptr<const void> lifetime() const { return lifetime_; }

 private:
  std::shared_ptr<const void> lifetime_ = std::make_shared<const char>('\0');
};

// The scalar reference of core/src/reference (single-threaded).
std::unique_ptr<Backend> make_reference_backend();

// A backend plugin's device 0. On a backend that addresses host memory, the ops it says it cannot run
// (supports_op) run on the reference instead, logged once per kind; on a GPU backend (backend 1.1's buffer_alloc)
// such an op is an error naming it, since its operands live in device memory.
std::unique_ptr<Backend> make_plugin_backend(std::unique_ptr<PluginInstance> plugin);

// The options a backend plugin instance of the launch gets: its `plugins.<name>` entry, flattened, and
// canonical_double=true when runtime.canonical_double is set (unless the entry names canonical_double itself).
// The main backend, the peer card and the peer link's service all take them.
std::vector<std::string> backend_options(const config::Launch& launch, const std::string& name);

// The launch's backend: "reference"; a plugin by name (loaded with its options from the launch); or "auto": the
// best-scoring usable backend plugin that the launch does not disable, else the reference (logged).
// Throws strata::Error naming the plugin when a named one cannot be used.
std::unique_ptr<Backend> select_backend(const config::Launch& launch, const PluginRegistry& registry);

}  // namespace strata
