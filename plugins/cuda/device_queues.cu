// Backend queue members: synchronize (1.1), and streams and events (1.2), with which the host orders copies on
// a copy stream against the ops on the compute stream (the hybrid decode step's PCIe part).
#include <string>

#include "instance.hpp"

namespace strata::gpu {
namespace {

cudaEvent_t event_of(strata_event e) { return reinterpret_cast<cudaEvent_t>(e); }

strata_status* null_event(Instance* inst) {
  return inst->ctx.error(STRATA_ERR_INVALID_ARGUMENT, std::string(kPluginName) + ": the event is NULL (make one with event_create)");
}

}  // namespace

strata_status* synchronize(void* c, uint32_t device) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    check_cuda(cudaStreamSynchronize(inst->ctx.stream()), "synchronize");
    return nullptr;
  });
}

strata_status* stream_create(void* c, uint32_t device, strata_stream* out) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    *out = nullptr;
    if (device != 0) return wrong_device(inst, device);
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    // Non-blocking: it never waits for the legacy default stream, only for the events it is told to.
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream_create");
    *out = reinterpret_cast<strata_stream>(s);
    return nullptr;
  });
}

void stream_destroy(void*, uint32_t, strata_stream stream) {
  if (stream == nullptr) return;  // the compute stream belongs to the instance
  const auto s = reinterpret_cast<cudaStream_t>(stream);
  (void)cudaStreamSynchronize(s);
  (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
}

strata_status* event_create(void* c, uint32_t device, strata_event* out) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    *out = nullptr;
    if (device != 0) return wrong_device(inst, device);
    check_cuda(cudaSetDevice(inst->ctx.options().device), "cudaSetDevice");
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event_create");
    *out = reinterpret_cast<strata_event>(e);
    return nullptr;
  });
}

void event_destroy(void*, uint32_t, strata_event event) {
  if (event == nullptr) return;
  (void)cudaEventSynchronize(event_of(event));
  (void)cudaEventDestroy(event_of(event));
  (void)cudaGetLastError();
}

strata_status* event_record(void* c, uint32_t device, strata_event event, strata_stream stream) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (event == nullptr) return null_event(inst);
    check_cuda(cudaEventRecord(event_of(event), stream_of(inst, stream)), "event_record");
    return nullptr;
  });
}

strata_status* stream_wait(void* c, uint32_t device, strata_stream stream, strata_event event) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (event == nullptr) return null_event(inst);
    check_cuda(cudaStreamWaitEvent(stream_of(inst, stream), event_of(event), 0), "stream_wait");
    return nullptr;
  });
}

strata_status* event_query(void* c, uint32_t device, strata_event event, uint32_t* done) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    *done = 0;
    if (device != 0) return wrong_device(inst, device);
    if (event == nullptr) return null_event(inst);
    const cudaError_t err = cudaEventQuery(event_of(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return nullptr;
    }
    check_cuda(err, "event_query");
    *done = 1;
    return nullptr;
  });
}

strata_status* event_synchronize(void* c, uint32_t device, strata_event event) {
  auto* inst = static_cast<Instance*>(c);
  return guarded(inst, [&]() -> strata_status* {
    if (device != 0) return wrong_device(inst, device);
    if (event == nullptr) return null_event(inst);
    check_cuda(cudaEventSynchronize(event_of(event)), "event_synchronize");
    return nullptr;
  });
}

}  // namespace strata::gpu
