// The packed scale fields of the block formats, read one way for both of their users: the dequantizers
// (dequantize_*.cpp) and the decompositions into canonical blocks (canonical_*.cpp). One definition each, so
// the two can never read a field differently.
#pragma once

#include <cstdint>
#include <cstring>

#include "strata/format/blocks.hpp"

namespace strata::format {

// Q5_0/Q5_1 keep each value's fifth bit in a 32-bit little-endian word: bit j for value j.
inline uint32_t q5_high_bits(const uint8_t (&qh)[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return bits;
}

// Q4_K/Q5_K pack eight 6-bit scales and eight 6-bit mins into 12 bytes: sub-blocks 0-3 use the low 6 bits of
// bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7 take their low nibbles from bytes 8-11 and their top two bits
// from the spare high bits of bytes 0-7.
struct KScaleMin {
  uint8_t scale;
  uint8_t min;
};

inline KScaleMin k4_scale_min(int j, const uint8_t (&s)[K_SCALE_SIZE]) {
  if (j < 4) return {static_cast<uint8_t>(s[j] & 63), static_cast<uint8_t>(s[j + 4] & 63)};
  return {static_cast<uint8_t>((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4))};
}

// Q3_K packs sixteen 6-bit scales (biased by 32) into 12 bytes: low nibbles in bytes 0-7 (scale k and k+8 share
// byte k mod 8), the top two bits in bytes 8-11 (two bits per scale, scale k at byte 8 + k%4, bit 2*(k/4)).
inline int q3k_scale(int k, const uint8_t (&s)[12]) {
  const int low = (k < 8) ? (s[k] & 0x0f) : (s[k - 8] >> 4);
  const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// IQ2_XXS/IQ2_XS/IQ2_S scale a 4-bit sub-block scale s as d * (0.5 + s) * 0.25, rounded in that order.
inline float iq2_scale(float d, int s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

}  // namespace strata::format
