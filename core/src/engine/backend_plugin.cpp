// A backend plugin behind the Backend interface: runs of supported ops go to the plugin in one compute call;
// an op it does not support runs on the reference in between.
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"
#include "strata/reference_backend.hpp"

namespace strata {
namespace {

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::unique_ptr<PluginInstance> plugin) : plugin_(std::move(plugin)), name_(plugin_->name()) {
    table_ = static_cast<const strata_backend_v1*>(
        plugin_->interface(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION, offsetof(strata_backend_v1, buffer_alloc)));
    if (table_ == nullptr || table_->compute == nullptr || table_->supports_op == nullptr) {
      throw Error("plugin '" + name_ + "' does not provide the backend interface (family backend, version 1)");
    }
    const std::vector<DeviceSummary> devices = plugin_->devices();
    if (devices.empty()) throw Error("plugin '" + name_ + "' has no devices");
    device_ = devices.front().name;
  }

  const std::string& name() const override { return name_; }
  std::string describe() const override { return name_ + " (" + device_ + ")"; }

  void compute(std::span<const strata_op> ops) override {
    size_t start = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (table_->supports_op(plugin_->ctx(), 0, &ops[i]) != 0) continue;
      run_plugin(ops.subspan(start, i - start));
      fallback(ops[i]);
      start = i + 1;
    }
    run_plugin(ops.subspan(start));
  }

 private:
  void run_plugin(std::span<const strata_op> ops) {
    if (ops.empty()) return;
    throw_if_error(table_->compute(plugin_->ctx(), 0, ops.data(), ops.size()), name_, "compute");
  }

  void fallback(const strata_op& op) {
    if (logged_.insert(op.kind).second) {
      log::info("backend " + name_ + " does not support " + op_kind_name(op.kind) +
                " with these types or shapes; the reference runs it");
    }
    run_reference(op);
  }

  std::unique_ptr<PluginInstance> plugin_;
  std::string name_;
  std::string device_;
  const strata_backend_v1* table_ = nullptr;
  std::set<uint32_t> logged_;
};

}  // namespace

std::unique_ptr<Backend> make_plugin_backend(std::unique_ptr<PluginInstance> plugin) {
  return std::make_unique<PluginBackend>(std::move(plugin));
}

}  // namespace strata
