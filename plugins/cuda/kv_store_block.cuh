// KV_STORE's writes of converted values into a cache column, shared by op_kv_store.cu and the fused head kernel:
// an f16 value, or a Q8_0 block of 32 values (kv_convert.cuh's conversions, bit for bit the format library's).
#pragma once

#include <cstdint>

#include "kv_convert.cuh"

namespace strata::gpu {

constexpr int kKvQ8Block = 32;
constexpr int kKvQ8Bytes = 34;  // f16 scale + 32 quants

// Block `b` of a Q8_0 column from x[0..32). Blocks are 34 bytes: only 2-byte alignment is guaranteed, so a block
// goes out as 17 half-words.
__device__ __forceinline__ void kv_store_q8_0_block(const float* x, char* column, int64_t b) {
  float v[kKvQ8Block];
#pragma unroll
  for (int j = 0; j < kKvQ8Block; ++j) v[j] = x[j];
  uint16_t d;
  int8_t qs[kKvQ8Block];
  quantize_block_q8_0(v, &d, qs);
  auto* out = reinterpret_cast<uint16_t*>(column + static_cast<uint64_t>(b) * kKvQ8Bytes);
  out[0] = d;
#pragma unroll
  for (int j = 0; j < kKvQ8Block / 2; ++j) {
    out[1 + j] = static_cast<uint16_t>(static_cast<uint8_t>(qs[2 * j]) |
                                       (static_cast<uint16_t>(static_cast<uint8_t>(qs[2 * j + 1])) << 8));
  }
}

}  // namespace strata::gpu
