#include "strata/format/quantize_activation.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "block_io.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format {
namespace {

void check_length(const char* what, int64_t n, int block) {
  if (n < 0 || n % block != 0) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                " values is not a whole number of blocks; n must be a non-negative multiple of " +
                                std::to_string(block));
  }
}

// Round half to even for |v| < 2^22: adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
// Q8_K uses this rounding; Q8_0/Q8_1 use roundf (half away from zero), as ggml does.
int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  const uint32_t bits = f32_bits(shifted);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

// Q8_0 and Q8_1 share their scale: the block's largest magnitude maps to 127.
struct Q8Scale {
  float d;
  float inv;
};

Q8Scale q8_scale(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < QK8_0; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;
  }
  const float d = amax / 127.0f;
  return {d, d != 0.0f ? 1.0f / d : 0.0f};
}

}  // namespace

void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n) {
  check_length("quantize_row_q8_0", n, QK8_0);
  for (int64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
    const Q8Scale s = q8_scale(x);
    block_q8_0 b;
    b.d = fp32_to_fp16(s.d);
    for (int j = 0; j < QK8_0; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * s.inv));
    store_block(y, i, b);
  }
}

void quantize_row_q8_1(const float* x, block_q8_1* y, int64_t n) {
  check_length("quantize_row_q8_1", n, QK8_1);
  for (int64_t i = 0; i < n / QK8_1; ++i, x += QK8_1) {
    const Q8Scale s = q8_scale(x);
    block_q8_1 b;
    b.d = fp32_to_fp16(s.d);
    int sum = 0;
    for (int j = 0; j < QK8_1; ++j) {
      b.qs[j] = static_cast<int8_t>(std::round(x[j] * s.inv));
      sum += b.qs[j];
    }
    // s caches d * sum(qs) so dot products with offset formats (Q4_1, Q5_1) can add the offset term once.
    b.s = fp32_to_fp16(static_cast<float>(sum) * s.d);
    store_block(y, i, b);
  }
}

void quantize_row_q8_K(const float* x, block_q8_K* y, int64_t n) {
  check_length("quantize_row_q8_K", n, QK_K);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    block_q8_K b;
    // The signed value of largest magnitude (first one on ties) maps to -127, so the scale carries its sign.
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      // ggml leaves bsums unwritten here; zeroing them keeps the output deterministic and still consistent.
      std::memset(&b, 0, sizeof b);
      store_block(y, i, b);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < QK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      b.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[16 * g + j];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
    store_block(y, i, b);
  }
}

}  // namespace strata::format
