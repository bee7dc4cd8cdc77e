// Counter-based random numbers for the generator: every block of every tensor gets its own stream, keyed by
// (seed, tensor index, block index), so the bytes written do not depend on how the work is split over threads.
// The mixing function is SplitMix64's (Steele, Lea, Flood 2014): fast and well distributed, not cryptographic.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace strata::mkmodel {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  static constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

  explicit Rng(uint64_t state) : state_(state) {}
  // The stream of block `block` of tensor `tensor` under `seed`.
  static Rng for_block(uint64_t seed, uint64_t tensor, uint64_t block) {
    return Rng(mix64(mix64(mix64(seed + kGolden) ^ (tensor * kGolden)) ^ block));
  }

  uint64_t next() {
    state_ += kGolden;
    return mix64(state_);
  }
  // n random bytes.
  void fill(uint8_t* out, size_t n) {
    while (n >= 8) {
      const uint64_t v = next();
      std::memcpy(out, &v, 8);
      out += 8;
      n -= 8;
    }
    if (n > 0) {
      const uint64_t v = next();
      std::memcpy(out, &v, n);
    }
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // A standard normal value (Box-Muller; the second value of each pair is dropped to keep streams simple).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace strata::mkmodel
