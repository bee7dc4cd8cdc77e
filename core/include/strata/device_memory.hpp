// Memory that a backend's device addresses, and buffers that live either there or in host memory.
//
// The reference and cpu_avx2 address host memory: they have no DeviceMemory and every buffer is a host array. A
// GPU backend (plugin_api.h backend 1.1: buffer_alloc, copy) has one: the engine then keeps the activations, the
// KV cache and the weights in device memory and moves only tokens, positions and logits across.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` of device memory. Throws strata::Error naming the device and the size when it cannot.
  virtual void* allocate(uint64_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  // `bytes` of page-locked host memory that kernels address with the same pointer (backend 1.1's
  // STRATA_BUFFER_HOST_MAPPED): what the host writes there the device reads without a copy. Freed by release().
  virtual void* allocate_mapped(uint64_t bytes) = 0;
  // The device's free memory now.
  virtual uint64_t free_bytes() const = 0;
  // runtime.gpu_memory: from now on the engine plans with at most `bytes` of this device, counted from here (what
  // the device's free memory drops by after this call counts against the cap; the runtime's own context, made
  // before, does not). 0: no cap, and the mark is still taken (placed_bytes counts from here). Not thread-safe;
  // call before placing anything.
  void cap_at(uint64_t bytes) {
    cap_ = bytes;
    free_at_mark_ = free_bytes();
  }
  uint64_t cap() const { return cap_; }
  // What the engine could place when cap_at was called: the free memory then, at most the cap.
  uint64_t room_at_mark() const { return cap_ > 0 ? std::min(free_at_mark_, cap_) : free_at_mark_; }
  // What the device's free memory dropped by since cap_at.
  uint64_t placed_bytes() const {
    const uint64_t free = free_bytes();
    return free_at_mark_ > free ? free_at_mark_ - free : 0;
  }
  // What the engine may still place here (what an expert cache plans with): the free memory, and under a cap also
  // no more than the cap less what was placed since cap_at.
  uint64_t room_bytes() const {
    const uint64_t free = free_bytes();
    if (cap_ == 0) return free;
    const uint64_t placed = placed_bytes();
    return std::min(free, cap_ > placed ? cap_ - placed : 0);
  }
  // Copies; they return when the bytes have arrived, after everything computed before.
  virtual void upload(void* device_dst, const void* host_src, uint64_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, uint64_t bytes) = 0;
  // "NVIDIA H200" for messages.
  virtual const std::string& device_name() const = 0;

 private:
  uint64_t cap_ = 0, free_at_mark_ = 0;
};

// How a host buffer starts: zeroed, or untouched (its pages stay unmapped until written: the KV cache).
enum class HostInit { Zero, Untouched };

// n values of T: a host array when mem is null, else device memory (left as the device gives it).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t n, DeviceMemory* mem, HostInit init = HostInit::Zero) : n_(n), mem_(mem) {
    if (mem == nullptr) {
      host_ = init == HostInit::Zero ? std::make_unique<T[]>(n) : std::make_unique_for_overwrite<T[]>(n);
      ptr_ = host_.get();
    } else if (n > 0) {
      ptr_ = static_cast<T*>(mem->allocate(n * sizeof(T)));
    }
  }
  // n values of T in mem's mapped host memory: the host reads and writes them directly, kernels too.
  static Buffer mapped(size_t n, DeviceMemory& mem) {
    Buffer b;
    b.n_ = n;
    b.mem_ = &mem;
    b.mapped_ = true;
    b.ptr_ = static_cast<T*>(mem.allocate_mapped(n * sizeof(T) + (n == 0 ? 1 : 0)));
    return b;
  }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      n_ = o.n_;
      mem_ = o.mem_;
      ptr_ = o.ptr_;
      mapped_ = o.mapped_;
      host_ = std::move(o.host_);
      o.n_ = 0;
      o.ptr_ = nullptr;
      o.mem_ = nullptr;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  T* data() const { return ptr_; }
  size_t size() const { return n_; }
  // In device memory: the host must copy to read or write it (mapped buffers are host memory).
  bool on_device() const { return mem_ != nullptr && !mapped_; }
  // Host and mapped buffers only.
  T& operator[](size_t i) const { return ptr_[i]; }
  // Lets go of device or mapped memory without releasing it: for a buffer whose DeviceMemory was destroyed (its
  // backend went first; releasing through it would touch freed memory).
  void abandon() noexcept {
    if (mem_ != nullptr) ptr_ = nullptr, mem_ = nullptr;
  }

 private:
  void reset() noexcept {
    if (mem_ != nullptr && ptr_ != nullptr) mem_->release(ptr_);
    host_.reset();
    ptr_ = nullptr;
  }
  size_t n_ = 0;
  DeviceMemory* mem_ = nullptr;
  T* ptr_ = nullptr;
  bool mapped_ = false;
  std::unique_ptr<T[]> host_;
};

}  // namespace strata
