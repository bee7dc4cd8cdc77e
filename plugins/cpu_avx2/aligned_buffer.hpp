// A growable, 64-byte aligned scratch buffer (activations, intermediates). Contents are not kept on growth.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace strata::cpu {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // At least `bytes` bytes; throws std::bad_alloc when memory runs out.
  void* reserve(size_t bytes) {
    if (bytes <= size_) return data_;
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::free(data_);
    data_ = p;
    size_ = rounded;
    return data_;
  }
  template <class T>
  T* as(size_t count) {
    return static_cast<T*>(reserve(count * sizeof(T)));
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata::cpu
