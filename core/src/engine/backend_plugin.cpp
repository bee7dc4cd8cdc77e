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
#include "plugin_queues.hpp"

namespace strata {
namespace {

// A GPU plugin's memory (backend 1.1's buffer_alloc, buffer_free, copy).
class PluginMemory final : public DeviceMemory {
 public:
  PluginMemory(PluginInstance& plugin, const strata_backend_v1& table, std::string device)
      : plugin_(plugin), table_(table), device_(std::move(device)) {}

  void* allocate(uint64_t bytes) override {
    void* p = nullptr;
    throw_if_error(table_.buffer_alloc(plugin_.ctx(), 0, bytes, STRATA_BUFFER_DEVICE, &p), plugin_.name(), "buffer_alloc");
    if (p == nullptr) throw Error("plugin '" + plugin_.name() + "' returned no buffer for " + std::to_string(bytes) + " bytes");
    return p;
  }
  void* allocate_mapped(uint64_t bytes) override {
    void* p = nullptr;
    throw_if_error(table_.buffer_alloc(plugin_.ctx(), 0, bytes, STRATA_BUFFER_HOST_MAPPED, &p), plugin_.name(),
                   "buffer_alloc (mapped host memory)");
    if (p == nullptr) throw Error("plugin '" + plugin_.name() + "' returned no mapped buffer for " + std::to_string(bytes) + " bytes");
    return p;
  }
  void release(void* p) noexcept override { table_.buffer_free(plugin_.ctx(), 0, p); }
  uint64_t free_bytes() const override {
    strata_device_info info{};
    info.struct_size = sizeof info;
    throw_if_error(table_.device_info(plugin_.ctx(), 0, &info), plugin_.name(), "device_info");
    return info.memory_free;
  }
  void upload(void* dst, const void* src, uint64_t bytes) override {
    throw_if_error(table_.copy(plugin_.ctx(), 0, dst, src, bytes, STRATA_COPY_HOST_TO_DEVICE), plugin_.name(), "copy");
  }
  void download(void* dst, const void* src, uint64_t bytes) override {
    throw_if_error(table_.copy(plugin_.ctx(), 0, dst, src, bytes, STRATA_COPY_DEVICE_TO_HOST), plugin_.name(), "copy");
  }
  const std::string& device_name() const override { return device_; }

 private:
  PluginInstance& plugin_;
  const strata_backend_v1& table_;
  std::string device_;
};

bool has_memory(const strata_backend_v1& t) {
  return t.header.minor >= 1 && t.header.struct_size >= sizeof(strata_backend_v1) && t.buffer_alloc != nullptr &&
         t.buffer_free != nullptr && t.copy != nullptr;
}

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::unique_ptr<PluginInstance> plugin) : plugin_(std::move(plugin)), name_(plugin_->name()) {
    table_ = static_cast<const strata_backend_v1*>(
        plugin_->interface(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION, offsetof(strata_backend_v1, buffer_alloc)));
    if (table_ == nullptr || table_->compute == nullptr || table_->supports_op == nullptr) {
      throw Error("plugin '" + name_ + "' does not provide the backend interface (family backend, version 1)");
    }
    // Backend 1.6 appended a member to strata_op, and ops travel in arrays: an older plugin would misread them.
    if (table_->header.minor < 6) {
      throw Error("plugin '" + name_ + "' implements backend 1." + std::to_string(table_->header.minor) +
                  ", older than this host's strata_op (backend 1.6); rebuild the plugin against this tree");
    }
    const std::vector<DeviceSummary> devices = plugin_->devices();
    if (devices.empty()) throw Error("plugin '" + name_ + "' has no devices");
    device_ = devices.front().name;
    if (has_memory(*table_)) {
      memory_ = std::make_unique<PluginMemory>(*plugin_, *table_, device_);
      queues_ = make_plugin_queues(*plugin_, *table_);
    }
  }

  DeviceMemory* device_memory() override { return memory_.get(); }
  DeviceQueues* device_queues() override { return queues_.get(); }
  bool supports(const strata_op& op) override { return table_->supports_op(plugin_->ctx(), 0, &op) != 0; }

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
    if (memory_ != nullptr) {
      throw Error("backend " + name_ + " cannot run " + op_kind_name(op.kind) +
                  " with these types or shapes, and its operands are in device memory, so the reference cannot "
                  "either; run this model with `backend: cpu_avx2` or `backend: reference`");
    }
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
  // Declared last: destroyed first, while the plugin is alive.
  std::unique_ptr<PluginMemory> memory_;
  std::unique_ptr<DeviceQueues> queues_;
};

}  // namespace

std::unique_ptr<Backend> make_plugin_backend(std::unique_ptr<PluginInstance> plugin) {
  return std::make_unique<PluginBackend>(std::move(plugin));
}

}  // namespace strata
