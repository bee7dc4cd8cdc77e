// Appending GGUF's little-endian encodings to a byte vector. Private to core/src/gguf.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace strata::gguf::detail {

template <class T>
void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

inline void append_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

inline void append_string(std::vector<uint8_t>& out, std::string_view s) {
  append<uint64_t>(out, s.size());
  append_bytes(out, s.data(), s.size());
}

}  // namespace strata::gguf::detail
