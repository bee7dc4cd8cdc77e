// The KV cache's element conversions, host and device alike, bit for bit those of the format library: float to
// binary16 rounded to nearest even (strata::format::fp32_to_fp16, NaN payloads kept), binary16 to float (exact),
// and a Q8_0 block from 32 floats (strata::format::quantize_row_q8_0: amax / 127, roundf of x / d's inverse).
#pragma once

#include <cstdint>

#include "canonical_math.cuh"

namespace strata::gpu {

__host__ __device__ __forceinline__ uint16_t f32_to_f16_bits(float f) {
  const uint32_t u = canon_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // quiet NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up round to inf
  if (abs < 0x38800000u) {
    // A subnormal half (or zero): the value in units of 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t shift = 126u - (abs >> 23);  // 14..24
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;  // exponent rebiased 127 -> 15
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is the right rounding
  return static_cast<uint16_t>(sign | h);
}

// Exact: normals and subnormals scale by 2^112 from the shifted bits (an exact power-of-two product); infinities
// and NaNs (exponent 31) take binary32's all-ones exponent.
__host__ __device__ __forceinline__ float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t body = static_cast<uint32_t>(h & 0x7fffu) << 13;
  if ((h & 0x7c00u) == 0x7c00u) return canon_from_bits(sign | 0x7f800000u | body);
  return canon_from_bits(sign | canon_bits(canon_from_bits(body) * canon_from_bits(0x77800000u)));
}

// A rounded quant as x86 stores (int8_t)roundf(v): a 32-bit conversion (0x80000000 for NaN and out-of-range
// values) of which the low byte is kept. A GPU's conversion would saturate instead.
__host__ __device__ __forceinline__ int8_t q8_from_rounded(float r) {
  if (!(r >= -2147483648.0f && r < 2147483648.0f)) return 0;
  return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(static_cast<int32_t>(r)) & 0xffu));
}

// One Q8_0 block of x[0..32): the scale's binary16 bits and 32 quants, as quantize_row_q8_0 makes them. The
// running maximum keeps the reference's comparison (amax > a ? amax : a), so NaNs land where they do there.
__host__ __device__ __forceinline__ void quantize_block_q8_0(const float* x, uint16_t* d_bits, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = fabsf(x[j]);
    amax = amax > a ? amax : a;
  }
  const float d = div_x86(amax, 127.0f);
  const float inv = d != 0.0f ? div_x86(1.0f, d) : 0.0f;
  *d_bits = f32_to_f16_bits(d);
  for (int j = 0; j < 32; ++j) qs[j] = q8_from_rounded(roundf(x[j] * inv));
}

}  // namespace strata::gpu
