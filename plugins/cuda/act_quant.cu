// The activation kernels of act_quant.cuh: Q8_1 with a 32-lane group per block, SwiGLU with one thread per block.
#include "act_quant.cuh"
#include "dependent_launch.cuh"
#include "ops.hpp"

namespace strata::gpu {
namespace {

constexpr int kThreads = 128;

__device__ void store_block(void* out, int64_t index, const uint32_t (&w)[kQ8Words]) {
  auto* dst = reinterpret_cast<uint32_t*>(static_cast<unsigned char*>(out) + index * kQ8Bytes);
#pragma unroll
  for (int i = 0; i < kQ8Words; ++i) dst[i] = w[i];
}

// One value a thread: the 32 lanes of a group quantize one block together (group_store_q8_1), so no thread walks
// a block and every load is in flight at once.
__global__ void quantize_q8_1_kernel(const float* x, int64_t x_stride, int64_t blocks_per_row, int64_t rows,
                                     void* out) {
  wait_for_inputs();  // before any return (dependent_launch.cuh)
  start_dependents();
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t index = thread / 32;  // the block; the whole group returns together
  if (index >= blocks_per_row * rows) return;
  const int lane = static_cast<int>(thread % 32);
  const int64_t row = index / blocks_per_row, blk = index % blocks_per_row;
  group_store_q8_1(x[row * x_stride + 32 * blk + lane], lane, static_cast<unsigned char*>(out) + index * kQ8Bytes);
}

__global__ void swiglu_kernel(const float* g, const float* u, int64_t n, int64_t blocks_per_row, int64_t rows,
                              ExpertAct act, RowBiases bias, float* h, void* hq) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (index >= blocks_per_row * rows) return;
  const int64_t row = index / blocks_per_row, blk = index % blocks_per_row;
  const int64_t first = row * n + 32 * blk;
  const int valid = static_cast<int>(n - 32 * blk < 32 ? n - 32 * blk : 32);
  float v[32];
  const int e = bias.row_expert != nullptr ? bias.row_expert[row] : -1;
  const float* bg = e >= 0 && bias.gate != nullptr ? bias.gate + e * n + 32 * blk : nullptr;
  const float* bu = e >= 0 && bias.up != nullptr ? bias.up + e * n + 32 * blk : nullptr;
  swiglu_block(g + first, u + first, valid, act, v, bg, bu);
  if (h != nullptr) {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      if (i < valid) h[first + i] = v[i];
    }
  }
  if (hq != nullptr) {
    uint32_t w[kQ8Words];
    quantize_block_q8_1(v, w);
    store_block(hq, index, w);
  }
}

unsigned grid_for(int64_t items) { return static_cast<unsigned>((items + kThreads - 1) / kThreads); }

}  // namespace

void launch_quantize_q8_1(const float* x, int64_t x_stride, int64_t n, int64_t rows, void* out, cudaStream_t stream) {
  const int64_t items = n / 32 * rows;
  if (items == 0) return;
  quantize_q8_1_kernel<<<grid_for(items * 32), kThreads, 0, stream>>>(x, x_stride, n / 32, rows, out);
  check_launch("quantize_q8_1");
}

void launch_quantize_q8_1(const Context& ctx, const float* x, int64_t x_stride, int64_t n, int64_t rows, void* out) {
  const int64_t items = n / 32 * rows;
  if (items == 0) return;
  launch_dependent(ctx, quantize_q8_1_kernel, grid_for(items * 32), kThreads, 0, x, x_stride, n / 32, rows, out);
  check_launch("quantize_q8_1");
}

void launch_swiglu(const float* g, const float* u, int64_t n, int64_t rows, const ExpertAct& act, float* h, void* hq,
                   cudaStream_t stream, const RowBiases& bias) {
  const int64_t blocks_per_row = (n + 31) / 32;
  const int64_t items = blocks_per_row * rows;
  if (items == 0) return;
  swiglu_kernel<<<grid_for(items), kThreads, 0, stream>>>(g, u, n, blocks_per_row, rows, act, bias, h, hq);
  check_launch("swiglu");
}

}  // namespace strata::gpu
