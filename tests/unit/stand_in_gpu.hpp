// A GPU stand-in for tests on machines without one: a backend whose "device memory" is host memory, computing with
// a real CPU backend. Its compute stream is a thread of its own that runs the enqueued ops in order while the
// caller goes on, as a GPU's does (a device program's WAIT then waits there for the host); other streams copy at
// once. The engine then takes every path it takes on a GPU (weights copied to the device, device activations, the
// hybrid expert path with its streams, events, mapped buffers, registered arena and flags), while the arithmetic
// stays the CPU backend's.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <map>
#include <span>
#include <string>
#include <utility>

#include "strata/backend.hpp"
#include "strata/error.hpp"

namespace strata::test {

class StandInGpu final : public Backend, public DeviceMemory, public DeviceQueues {
 public:
  explicit StandInGpu(std::unique_ptr<Backend> inner, uint64_t free_bytes = uint64_t{1} << 32)
      : inner_(std::move(inner)), free_(free_bytes), name_("stand-in GPU over " + inner_->name()) {
    worker_ = std::thread([this] { serve(); });
  }
  ~StandInGpu() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  // Backend
  const std::string& name() const override { return name_; }
  std::string describe() const override { return name_; }
  void compute(std::span<const strata_op> ops) override {
    if (on_ops_) on_ops_(ops);
    refuse_what_it_lacks(ops);
    drain();
    inner_->compute(ops);
  }
  DeviceMemory* device_memory() override { return this; }
  DeviceQueues* device_queues() override { return this; }
  bool supports(const strata_op& op) override { return !lacks(op) && inner_->supports(op); }

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
  // Blocking copies wait for the compute stream, as cudaMemcpy does.
  void upload(void* d, const void* s, uint64_t n) override {
    drain();
    std::memcpy(d, s, n);
  }
  void download(void* d, const void* s, uint64_t n) override {
    drain();
    std::memcpy(d, s, n);
  }
  const std::string& device_name() const override { return name_; }

  // DeviceQueues. An event recorded on the compute stream marks how many of its tasks came before it; on any other
  // stream (whose work is done at once) it is done when recorded.
  strata_stream make_stream() override { return reinterpret_cast<strata_stream>(++streams_); }
  void drop_stream(strata_stream) noexcept override {}
  strata_event make_event() override { return reinterpret_cast<strata_event>(++events_); }
  void drop_event(strata_event) noexcept override {}
  void record(strata_event e, strata_stream s) override {
    std::lock_guard<std::mutex> lock(mutex_);
    marks_[e] = s == nullptr ? queued_ : 0;
  }
  void wait(strata_stream s, strata_event e) override {
    if (s != nullptr) synchronize(e);  // the compute stream runs in order, and other streams' events are done
  }
  bool done(strata_event e) override {
    std::lock_guard<std::mutex> lock(mutex_);
    rethrow_failure();
    return ran_ >= marks_[e];
  }
  void synchronize(strata_event e) override {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t mark = marks_[e];
    idle_.wait(lock, [&] { return ran_ >= mark; });
    rethrow_failure();
  }
  void copy_async(void* dst, const void* src, uint64_t bytes, strata_copy_kind, strata_stream s) override {
    copied_ += bytes;
    if (s != nullptr) {
      std::memcpy(dst, src, bytes);
      return;
    }
    enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  // Counted, then copied one by one as the base does (a backend without backend 1.8's batch).
  void copy_batch_async(std::span<void* const> dsts, std::span<const void* const> srcs, std::span<const uint64_t> bytes,
                        strata_copy_kind kind, strata_stream s) override {
    ++batches_;
    batched_copies_ += dsts.size();
    DeviceQueues::copy_batch_async(dsts, srcs, bytes, kind, s);
  }
  uint64_t batches() const { return batches_; }
  uint64_t batched_copies() const { return batched_copies_; }
  void compute_async(std::span<const strata_op> ops) override {
    if (on_ops_) on_ops_(ops);
    refuse_what_it_lacks(ops);
    bool fail = false;
    for (const strata_op& op : ops) fail = fail || op.kind == fail_kind_;
    enqueue([this, fail, list = std::vector<strata_op>(ops.begin(), ops.end())] {
      if (fail) throw Error("stand-in GPU: a device failure injected before op kind " + std::to_string(fail_kind_));
      inner_->compute(list);
    });
    if (blocking_enqueue_) drain();
  }
  // A device whose enqueue returns only when the work is done (as a full launch queue, or scratch memory growing
  // before a first run, makes a real one wait).
  void set_blocking_enqueue(bool on) { blocking_enqueue_ = on; }
  // A device without MOE_ROUTED's ready-flagged form (i[0] = 1), as cuda for expert types its decode kernels
  // lack: supports() says no, and a list holding one is refused when given, as the plugin refuses it.
  void lack_flagged_moe_routed(bool on) { lacks_flagged_ = on; }
  // Called with every op list the device is given (compute and compute_async), before it runs.
  void watch_ops(std::function<void(std::span<const strata_op>)> f) { on_ops_ = std::move(f); }
  // Op lists holding an op of this kind fail on the device (the next wait reports it).
  void fail_lists_with(uint32_t kind) { fail_kind_ = kind; }
  bool register_host(void*, uint64_t, bool, std::string&) override { return true; }
  void unregister_host(void*) noexcept override {}

  uint64_t copied_bytes() const { return copied_; }
  // The resident pages of its "device memory" (host memory here), for tests of the process's resident memory to
  // take out; a page two allocations share counts once for each.
  uint64_t resident_device_bytes() const {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uint64_t total = 0;
    std::vector<unsigned char> in_core;
    for (const auto& [p, bytes] : live_) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(p) / page * page;
      const uintptr_t len = reinterpret_cast<uintptr_t>(p) + bytes - a;
      in_core.assign((len + page - 1) / page, 0);
      if (mincore(reinterpret_cast<void*>(a), len, in_core.data()) != 0) continue;
      for (unsigned char c : in_core) total += (c & 1) ? page : 0;
    }
    return total;
  }

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
  void enqueue(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
      ++queued_;
    }
    wake_.notify_all();
  }
  // Waits until the compute stream has run everything enqueued so far.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t mark = queued_;
    idle_.wait(lock, [&] { return ran_ >= mark; });
    rethrow_failure();
  }
  // A failed task fails the next wait, once, as a device error does.
  void rethrow_failure() {
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      std::exception_ptr failed;
      try {
        task();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (failed && !failure_) failure_ = failed;
      ++ran_;
      idle_.notify_all();
    }
  }

  std::unique_ptr<Backend> inner_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  uint64_t queued_ = 0, ran_ = 0;  // compute stream tasks enqueued and run
  std::map<strata_event, uint64_t> marks_;
  std::exception_ptr failure_;
  bool stop_ = false;
  bool blocking_enqueue_ = false;
  uint32_t fail_kind_ = 0;
  std::thread worker_;
  uint64_t free_ = 0, used_ = 0;
  std::atomic<uint64_t> copied_{0};
  std::atomic<uint64_t> batches_{0}, batched_copies_{0};
  uintptr_t streams_ = 0, events_ = 0;
  std::map<void*, uint64_t> live_;
  std::string name_;
  std::function<void(std::span<const strata_op>)> on_ops_;
  bool lacks_flagged_ = false;
  bool lacks(const strata_op& op) const { return lacks_flagged_ && op.kind == STRATA_OP_MOE_ROUTED && op.i[0] == 1; }
  void refuse_what_it_lacks(std::span<const strata_op> ops) const {
    for (const strata_op& op : ops) {
      if (lacks(op)) throw Error("stand-in GPU: unsupported op: MOE_ROUTED with a ready flag");
    }
  }
};

}  // namespace strata::test
