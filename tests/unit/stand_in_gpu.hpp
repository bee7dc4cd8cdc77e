// A GPU stand-in for tests on machines without one: a backend whose "device memory" is host memory and whose
// queues copy at once, computing with a real CPU backend. The engine then takes every path it takes on a GPU
// (weights copied to the device, device activations, the hybrid expert path with its streams, events, mapped
// buffers and registered arena), while the arithmetic stays the CPU backend's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <map>
#include <string>

#include "strata/backend.hpp"
#include "strata/error.hpp"

namespace strata::test {

class StandInGpu final : public Backend, public DeviceMemory, public DeviceQueues {
 public:
  explicit StandInGpu(std::unique_ptr<Backend> inner, uint64_t free_bytes = uint64_t{1} << 32)
      : inner_(std::move(inner)), free_(free_bytes), name_("stand-in GPU over " + inner_->name()) {}
  ~StandInGpu() override = default;

  // Backend
  const std::string& name() const override { return name_; }
  std::string describe() const override { return name_; }
  void compute(std::span<const strata_op> ops) override { inner_->compute(ops); }
  DeviceMemory* device_memory() override { return this; }
  DeviceQueues* device_queues() override { return this; }
  bool supports(const strata_op& op) override { return inner_->supports(op); }

  // DeviceMemory: 64-byte aligned host memory.
  void* allocate(uint64_t bytes) override { return grab(bytes); }
  void* allocate_mapped(uint64_t bytes) override { return grab(bytes); }
  void release(void* p) noexcept override {
    const auto it = live_.find(p);
    if (it == live_.end()) return;
    used_ -= it->second;
    live_.erase(it);
    std::free(p);
  }
  uint64_t free_bytes() const override { return free_ > used_ ? free_ - used_ : 0; }
  void upload(void* d, const void* s, uint64_t n) override { std::memcpy(d, s, n); }
  void download(void* d, const void* s, uint64_t n) override { std::memcpy(d, s, n); }
  const std::string& device_name() const override { return name_; }

  // DeviceQueues: everything happens at once, in order.
  strata_stream make_stream() override { return reinterpret_cast<strata_stream>(++streams_); }
  void drop_stream(strata_stream) noexcept override {}
  strata_event make_event() override { return reinterpret_cast<strata_event>(++events_); }
  void drop_event(strata_event) noexcept override {}
  void record(strata_event, strata_stream) override {}
  void wait(strata_stream, strata_event) override {}
  bool done(strata_event) override { return true; }
  void synchronize(strata_event) override {}
  void copy_async(void* dst, const void* src, uint64_t bytes, strata_copy_kind, strata_stream) override {
    std::memcpy(dst, src, bytes);
    copied_ += bytes;
  }
  void compute_async(std::span<const strata_op> ops) override { inner_->compute(ops); }
  bool register_host(void*, uint64_t, bool, std::string&) override { return true; }
  void unregister_host(void*) noexcept override {}

  uint64_t copied_bytes() const { return copied_; }

 private:
  void* grab(uint64_t bytes) {
    const uint64_t n = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
    if (used_ + n > free_) throw Error("the stand-in GPU has no room for " + std::to_string(bytes) + " bytes");
    void* p = std::aligned_alloc(64, n);
    if (p == nullptr) throw Error("out of host memory");
    live_.emplace(p, n);
    used_ += n;
    return p;
  }
  std::unique_ptr<Backend> inner_;
  uint64_t free_ = 0, used_ = 0, copied_ = 0;
  uintptr_t streams_ = 0, events_ = 0;
  std::map<void*, uint64_t> live_;
  std::string name_;
};

}  // namespace strata::test
