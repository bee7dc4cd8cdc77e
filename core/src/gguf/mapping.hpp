// A read-only memory map of a whole file. Private to core/src/gguf.
#pragma once

#include <cstdint>
#include <string>

namespace strata::gguf::detail {

class Mapping {
 public:
  Mapping() = default;
  // Maps `path` read-only; IoError when it cannot be opened, is not a regular file or cannot be mapped.
  explicit Mapping(const std::string& path);
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  void release() noexcept;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace strata::gguf::detail
