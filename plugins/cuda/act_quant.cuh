// Activations into the one activation format, Q8_1 (docs/CANONICAL_ARITHMETIC.md section 1), bit for bit what
// core/format's quantize_row_q8_1 writes (amax in element order, d = amax / 127 rounded to binary16, roundf
// halves away from zero, s = fp16(sum * d)); and the expert's SwiGLU step (section 3 step 3) fused with it.
#pragma once

#include <cstdint>

#include "canonical_math.cuh"
#include "expert_form.cuh"
#include "gpu_runtime.cuh"

namespace strata::gpu {

// A block_q8_1 as nine words: word 0 is d | s << 16, words 1..8 the 32 int8 values, four per word.
constexpr int kQ8Words = 9;
constexpr int kQ8Bytes = 36;

// The block's scale d and its reciprocal id (0 for an all-zero block), amax taken in element order.
__host__ __device__ inline void q8_1_scale(const float* x, float& d, float& id) {
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const float a = fabsf(x[j]);
    amax = amax > a ? amax : a;
  }
  d = div_c(amax, 127.0f);
  id = d != 0.0f ? div_c(1.0f, d) : 0.0f;
}

// One value of the block: roundf halves away from zero.
__host__ __device__ inline int8_t q8_1_value(float x, float id) { return static_cast<int8_t>(roundf(x * id)); }

// Word 0 of the block: d and s = fp16(sum * d) as binary16.
__host__ __device__ inline uint32_t q8_1_header(float d, int sum) {
  const uint16_t dh = float_to_half(d);
  const uint16_t sh = float_to_half(static_cast<float>(sum) * d);
  return static_cast<uint32_t>(dh) | static_cast<uint32_t>(sh) << 16;
}

__host__ __device__ inline void quantize_block_q8_1(const float (&x)[32], uint32_t (&out)[kQ8Words]) {
  float d, id;
  q8_1_scale(x, d, id);
  int sum = 0;
#pragma unroll
  for (int m = 0; m < 8; ++m) {
    uint32_t w = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int8_t q = q8_1_value(x[4 * m + i], id);
      sum += q;
      w |= static_cast<uint32_t>(static_cast<uint8_t>(q)) << (8 * i);
    }
    out[1 + m] = w;
  }
  out[0] = q8_1_header(d, sum);
}

#if defined(__CUDACC__) || defined(__HIPCC__)
// One block quantized by the 32 lanes of a group that hold it, lane i of the group holding x[i] (groups are lanes
// 32g..32g+31, so on 64-wide wavefronts too every xor partner below 32 stays inside the group): the bits of
// quantize_block_q8_1 with no thread walking the 32 values. Returns lane i's value; d and the sum of the values
// come back in every lane. Every lane of the group must call it (it shuffles).
__device__ inline int8_t group_quantize_q8_1(float x, int i, float& d, int& sum) {
  // quantize_block_q8_1 takes amax in element order as amax = amax > a ? amax : a; a NaN makes the next element
  // the new start, so the result is the largest |x| after the last NaN, or NaN when x[31] is one.
  int last_nan = isnan(x) ? i : -1;
  for (int m = 1; m < 32; m <<= 1) last_nan = max(last_nan, shfl_xor(last_nan, m));
  float amax = i > last_nan ? fabsf(x) : 0.0f;  // values are >= +0, so 0 leaves the maximum unchanged
  for (int m = 1; m < 32; m <<= 1) amax = fmaxf(amax, shfl_xor(amax, m));
  if (last_nan == 31) amax = __int_as_float(0x7fc00000);
  d = div_c(amax, 127.0f);
  const float id = d != 0.0f ? div_c(1.0f, d) : 0.0f;
  const int8_t q = q8_1_value(x, id);
  sum = q;
  for (int m = 1; m < 32; m <<= 1) sum += shfl_xor(sum, m);  // exact: integers
  return q;
}

// group_quantize_q8_1 written to the block at `blk` (36 bytes): each lane its byte, lane 0 the header.
__device__ inline void group_store_q8_1(float x, int i, unsigned char* blk) {
  float d;
  int sum;
  const int8_t q = group_quantize_q8_1(x, i, d, sum);
  blk[4 + i] = static_cast<unsigned char>(q);
  if (i == 0) *reinterpret_cast<uint32_t*>(blk) = q8_1_header(d, sum);
}
#endif

// Section 3 step 3 for 32 values: h_i = act(g_i, u_i) (swiglu_c, or swiglu_oai_c for gpt-oss's form); with bg
// (resp. bu), the form's biases of these 32 rows, g_i + bg_i (resp. u_i + bu_i) first (section 3.2 step 2).
__host__ __device__ inline void swiglu_block(const float* g, const float* u, int n, const ExpertAct& act,
                                             float (&h)[32], const float* bg = nullptr, const float* bu = nullptr) {
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    if (i < n) {
      const float gi = bg != nullptr ? add_x86(g[i], bg[i]) : g[i];
      const float ui = bu != nullptr ? add_x86(u[i], bu[i]) : u[i];
      h[i] = expert_act(act, gi, ui);
    } else {
      h[i] = 0.0f;
    }
  }
}

// Enqueues the Q8_1 quantization of `rows` rows of n floats (n a multiple of 32; row r at x + r * x_stride) into
// rows * n / 32 consecutive blocks at `out` (4-byte aligned).
void launch_quantize_q8_1(const float* x, int64_t x_stride, int64_t n, int64_t rows, void* out, cudaStream_t stream);

class Context;
// The same on the context's stream, overlapped with the kernel before it (dependent_launch.cuh).
void launch_quantize_q8_1(const Context& ctx, const float* x, int64_t x_stride, int64_t n, int64_t rows, void* out);

// Enqueues h = act(g, u) for `rows` rows of n values (g, u and h rows n floats apart; the biases are already in g
// and u); writes h as floats when `h` is not null and as Q8_1 blocks (n a multiple of 32, n / 32 blocks per row)
// when `hq` is not null.
// With `bias` set, the form's gate and up biases are added here (the tiled experts' path: its product kernel has no
// registers to spare for them): row r of g and u is expert bias.row_expert[r]'s (< 0: a row nobody reads).
struct RowBiases {
  const int* row_expert;
  const float* gate;  // [n, n_expert] or nullptr
  const float* up;
};
void launch_swiglu(const float* g, const float* u, int64_t n, int64_t rows, const ExpertAct& act, float* h, void* hq,
                   cudaStream_t stream, const RowBiases& bias = RowBiases{nullptr, nullptr, nullptr});

}  // namespace strata::gpu
