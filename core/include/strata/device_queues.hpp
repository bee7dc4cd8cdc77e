// The queues of a GPU backend (plugin_api.h backend 1.2): streams that run work in order, events that mark points
// of a stream for other streams and the host, copies on a stream, ops enqueued without waiting, and host memory
// registered (page-locked) so that copies from it run at the link's speed. The hybrid decode step copies missed
// experts on a copy stream while the compute stream runs, and orders the two with events.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "strata/plugin_api.h"

namespace strata {

class DeviceQueues {
 public:
  virtual ~DeviceQueues() = default;
  // Throw strata::Error naming the backend and the call when the device fails.
  virtual strata_stream make_stream() = 0;
  virtual void drop_stream(strata_stream s) noexcept = 0;
  virtual strata_event make_event() = 0;
  virtual void drop_event(strata_event e) noexcept = 0;
  // `s` null: the compute stream.
  virtual void record(strata_event e, strata_stream s) = 0;
  virtual void wait(strata_stream s, strata_event e) = 0;
  virtual bool done(strata_event e) = 0;
  virtual void synchronize(strata_event e) = 0;
  virtual void copy_async(void* dst, const void* src, uint64_t bytes, strata_copy_kind kind, strata_stream s) = 0;
  // Copies that copy_async would enqueue one after another, in one call where the backend has one (backend 1.8):
  // each copy_async costs the host microseconds, and a MoE layer's misses from a mapped file are a dozen copies.
  // The destinations must not overlap: the batch's copies may run in any order among themselves.
  virtual void copy_batch_async(std::span<void* const> dsts, std::span<const void* const> srcs,
                                std::span<const uint64_t> bytes, strata_copy_kind kind, strata_stream s) {
    for (size_t i = 0; i < dsts.size(); ++i) copy_async(dsts[i], srcs[i], bytes[i], kind, s);
  }
  // Enqueues ops on the compute stream and returns (every op must be one the backend supports).
  virtual void compute_async(std::span<const strata_op> ops) = 0;
  // Page-locks host memory; false with the device's reason when it cannot (the caller copies pageable memory).
  virtual bool register_host(void* p, uint64_t bytes, bool read_only, std::string& why) = 0;
  virtual void unregister_host(void* p) noexcept = 0;
};

// A stream that is released with its owner.
class DeviceStream {
 public:
  explicit DeviceStream(DeviceQueues& q) : q_(&q), s_(q.make_stream()) {}
  ~DeviceStream() { q_->drop_stream(s_); }
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  strata_stream get() const { return s_; }

 private:
  DeviceQueues* q_;
  strata_stream s_;
};

class DeviceEvent {
 public:
  explicit DeviceEvent(DeviceQueues& q) : q_(&q), e_(q.make_event()) {}
  ~DeviceEvent() { q_->drop_event(e_); }
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  strata_event get() const { return e_; }

 private:
  DeviceQueues* q_;
  strata_event e_;
};

// Host memory page-locked for the lifetime of the object, when the device allows it (locked() says; why() says
// why not).
class HostRegistration {
 public:
  HostRegistration(DeviceQueues& q, void* p, uint64_t bytes, bool read_only) : q_(&q), p_(p) {
    locked_ = q.register_host(p, bytes, read_only, why_);
  }
  ~HostRegistration() {
    if (locked_) q_->unregister_host(p_);
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  bool locked() const { return locked_; }
  const std::string& why() const { return why_; }

 private:
  DeviceQueues* q_;
  void* p_;
  bool locked_ = false;
  std::string why_;
};

}  // namespace strata
