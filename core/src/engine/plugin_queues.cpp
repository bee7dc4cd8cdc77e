#include "plugin_queues.hpp"

#include <cstddef>
#include <string>

#include "strata/error.hpp"

namespace strata {
namespace {

bool has_queues(const strata_backend_v1& t) {
  return t.header.minor >= 2 && t.header.struct_size >= offsetof(strata_backend_v1, host_unregister) + sizeof(void*) &&
         t.stream_create != nullptr && t.stream_destroy != nullptr && t.event_create != nullptr &&
         t.event_destroy != nullptr && t.event_record != nullptr && t.stream_wait != nullptr &&
         t.event_query != nullptr && t.event_synchronize != nullptr && t.copy_async != nullptr &&
         t.compute_async != nullptr && t.host_register != nullptr && t.host_unregister != nullptr;
}

class PluginQueues final : public DeviceQueues {
 public:
  PluginQueues(PluginInstance& plugin, const strata_backend_v1& table)
      : plugin_(plugin),
        t_(table),
        has_batch_(table.header.minor >= 8 &&
                   table.header.struct_size >= offsetof(strata_backend_v1, copy_batch_async) + sizeof(void*) &&
                   table.copy_batch_async != nullptr) {}

  strata_stream make_stream() override {
    strata_stream s = nullptr;
    check(t_.stream_create(ctx(), 0, &s), "stream_create");
    return s;
  }
  void drop_stream(strata_stream s) noexcept override {
    if (s != nullptr) t_.stream_destroy(ctx(), 0, s);
  }
  strata_event make_event() override {
    strata_event e = nullptr;
    check(t_.event_create(ctx(), 0, &e), "event_create");
    return e;
  }
  void drop_event(strata_event e) noexcept override {
    if (e != nullptr) t_.event_destroy(ctx(), 0, e);
  }
  void record(strata_event e, strata_stream s) override { check(t_.event_record(ctx(), 0, e, s), "event_record"); }
  void wait(strata_stream s, strata_event e) override { check(t_.stream_wait(ctx(), 0, s, e), "stream_wait"); }
  bool done(strata_event e) override {
    uint32_t d = 0;
    check(t_.event_query(ctx(), 0, e, &d), "event_query");
    return d != 0;
  }
  void synchronize(strata_event e) override { check(t_.event_synchronize(ctx(), 0, e), "event_synchronize"); }
  void copy_async(void* dst, const void* src, uint64_t bytes, strata_copy_kind kind, strata_stream s) override {
    check(t_.copy_async(ctx(), 0, dst, src, bytes, kind, s), "copy_async");
  }
  void copy_batch_async(std::span<void* const> dsts, std::span<const void* const> srcs, std::span<const uint64_t> bytes,
                        strata_copy_kind kind, strata_stream s) override {
    if (dsts.size() != srcs.size() || dsts.size() != bytes.size()) {
      throw Error("internal: copy_batch_async's destinations, sources and sizes differ in number");
    }
    if (dsts.empty()) return;
    if (!has_batch_ || dsts.size() == 1) {  // one copy: the plain call
      DeviceQueues::copy_batch_async(dsts, srcs, bytes, kind, s);
      return;
    }
    check(t_.copy_batch_async(ctx(), 0, dsts.data(), srcs.data(), bytes.data(), static_cast<uint32_t>(dsts.size()), kind, s),
          "copy_batch_async");
  }
  void compute_async(std::span<const strata_op> ops) override {
    check(t_.compute_async(ctx(), 0, ops.data(), ops.size()), "compute_async");
  }
  bool register_host(void* p, uint64_t bytes, bool read_only, std::string& why) override {
    const uint32_t flags = read_only ? STRATA_REGISTER_READ_ONLY : 0u;
    if (strata_status* st = t_.host_register(ctx(), 0, p, bytes, flags)) {
      why = take_status(st).second;
      return false;
    }
    return true;
  }
  void unregister_host(void* p) noexcept override { t_.host_unregister(ctx(), 0, p); }

 private:
  void* ctx() const { return plugin_.ctx(); }
  void check(strata_status* st, const char* what) const { throw_if_error(st, plugin_.name(), what); }

  PluginInstance& plugin_;
  const strata_backend_v1& t_;
  bool has_batch_;  // backend 1.8's copy_batch_async (else copy_async for each)
};

}  // namespace

std::unique_ptr<DeviceQueues> make_plugin_queues(PluginInstance& plugin, const strata_backend_v1& table) {
  if (!has_queues(table)) return nullptr;
  return std::make_unique<PluginQueues>(plugin, table);
}

}  // namespace strata
