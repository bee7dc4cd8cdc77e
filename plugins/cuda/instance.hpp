// One plugin instance (the `ctx` of every backend call) and the guard that turns C++ failures into statuses at
// the C boundary. Shared by the entry points (plugin.cu), device memory (device_buffers.cu) and the queues
// (device_queues.cu).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "context.hpp"
#include "graph_cache.hpp"
#include "ops.hpp"

namespace strata::gpu {

inline constexpr const char* kPluginName = STRATA_GPU_PLUGIN_NAME;

struct Instance {
  Context ctx;
  GraphCache graphs;
  std::mutex pinned_mutex;
  std::set<void*> pinned;               // buffers from cudaHostAlloc: freed with cudaFreeHost
  std::map<void*, void*> registered;    // host_register's pointer -> the page-aligned base it registered
  std::atomic<bool> batch_refused{false};  // the runtime refused a batched copy once: copy_batch_async loops since
  Instance(const strata_host_api* host, const Options& o) : ctx(host, o) {}
};

template <class Body>
strata_status* guarded(Instance* inst, Body body) noexcept {
  try {
    return body();
  } catch (const OpFailure& e) {
    return inst->ctx.error(e.code, std::string(kPluginName) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return inst->ctx.error(STRATA_ERR_OUT_OF_MEMORY, std::string(kPluginName) + ": out of host memory");
  } catch (const std::exception& e) {
    return inst->ctx.error(STRATA_ERR_INTERNAL, std::string(kPluginName) + ": " + e.what());
  } catch (...) {
    return inst->ctx.error(STRATA_ERR_INTERNAL, std::string(kPluginName) + ": unknown exception");
  }
}

inline strata_status* wrong_device(Instance* inst, uint32_t device) {
  return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + " instance drives one device (0), not " +
                                                          std::to_string(device) +
                                                          "; pick the GPU with the `device` option");
}

// Backend 1.1 and 1.2 members (device_buffers.cu, device_queues.cu).
strata_status* buffer_alloc(void* c, uint32_t device, uint64_t bytes, uint32_t kind, void** out);
void buffer_free(void* c, uint32_t device, void* buffer);
strata_status* copy(void* c, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind);
strata_status* copy_async(void* c, uint32_t device, void* dst, const void* src, uint64_t bytes, uint32_t kind,
                          strata_stream stream);
strata_status* copy_batch_async(void* c, uint32_t device, void* const* dsts, const void* const* srcs,
                                const uint64_t* bytes, uint32_t count, uint32_t kind, strata_stream stream);
strata_status* host_register(void* c, uint32_t device, void* ptr, uint64_t bytes, uint32_t flags);
void host_unregister(void* c, uint32_t device, void* ptr);
strata_status* synchronize(void* c, uint32_t device);
strata_status* stream_create(void* c, uint32_t device, strata_stream* out);
void stream_destroy(void* c, uint32_t device, strata_stream stream);
strata_status* event_create(void* c, uint32_t device, strata_event* out);
void event_destroy(void* c, uint32_t device, strata_event event);
strata_status* event_record(void* c, uint32_t device, strata_event event, strata_stream stream);
strata_status* stream_wait(void* c, uint32_t device, strata_stream stream, strata_event event);
strata_status* event_query(void* c, uint32_t device, strata_event event, uint32_t* done);
strata_status* event_synchronize(void* c, uint32_t device, strata_event event);

// The CUDA stream behind a strata_stream (NULL: the compute stream).
inline cudaStream_t stream_of(Instance* inst, strata_stream s) {
  return s == nullptr ? inst->ctx.stream() : reinterpret_cast<cudaStream_t>(s);
}

}  // namespace strata::gpu
