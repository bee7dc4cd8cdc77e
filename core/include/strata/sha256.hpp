// SHA-256 (FIPS 180-4), for keys that must not collide even when someone tries: the server's prefix reuse keys an
// image by its bytes, and a forged collision would hand one client the KV cache of another client's image.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace strata {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> bytes);
  Sha256Digest finish();  // the object is spent after this

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

Sha256Digest sha256(std::span<const uint8_t> bytes);
std::string to_hex(const Sha256Digest& digest);

}  // namespace strata
