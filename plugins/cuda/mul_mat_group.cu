// The one-token quantized MUL_MAT of mul_mat_group.cuh. Block b computes rows_per_block consecutive rows of one
// matrix of the group (the blocks of matrix m are first_block[m] .. first_block[m + 1] - 1): every (row, span)
// partial with two items' loads (weights and the Q8_1 row's block) in flight per thread, then the canonical
// accumulator chains and tree per row (matvec_block.cuh), plus the row's bias where a fused ADD gave one.
#include <algorithm>
#include <type_traits>

#include "act_quant.cuh"
#include "dependent_launch.cuh"
#include "fusion_match.hpp"
#include "matvec_block.cuh"
#include "mul_mat_group.cuh"

namespace strata::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 2;
constexpr int kMaxRowsPerBlock = kThreads / kAccumulators;  // the reduce's eight threads per row, one pass
constexpr int kMaxSharedBytes = 48 * 1024;

struct GroupArgs {
  const uint8_t* w[kMaxGroupMats];
  uint64_t stride[kMaxGroupMats];
  int rows[kMaxGroupMats];
  bool second[kMaxGroupMats];  // decoded by the kernel's second decoder
  float* dst[kMaxGroupMats];
  const float* bias[kMaxGroupMats];
  int first_block[kMaxGroupMats];
  int n;
};

// A window's launch: the group, and where each token's rows are.
struct WindowArgs {
  GroupArgs g;
  int64_t dst_stride[kMaxGroupMats];  // floats between two tokens' outputs
  uint64_t act_stride;                // bytes between two tokens' Q8_1 rows
  int n_tok;
};

// The fields of the block's matrix, picked with constant indices (a dynamic index into the kernel's arguments
// would copy them to local memory).
struct BlockMatrix {
  const uint8_t* w;
  uint64_t stride;
  int rows;
  bool second;
  float* dst;
  const float* bias;
  int first_block;
};

__device__ inline BlockMatrix block_matrix(const GroupArgs& g, int b) {
  BlockMatrix bm{g.w[0], g.stride[0], g.rows[0], g.second[0], g.dst[0], g.bias[0], g.first_block[0]};
#pragma unroll
  for (int i = 1; i < kMaxGroupMats; ++i) {
    if (i < g.n && b >= g.first_block[i]) {
      bm = {g.w[i], g.stride[i], g.rows[i], g.second[i], g.dst[i], g.bias[i], g.first_block[i]};
    }
  }
  return bm;
}

// The block's matrix's floats between two tokens' outputs, picked as block_matrix picks its fields.
__device__ inline int64_t block_dst_stride(const WindowArgs& wa, int b) {
  int64_t s = wa.dst_stride[0];
#pragma unroll
  for (int i = 1; i < kMaxGroupMats; ++i) {
    if (i < wa.g.n && b >= wa.g.first_block[i]) s = wa.dst_stride[i];
  }
  return s;
}

template <class Dec>
__device__ inline void matrix_rows(const uint8_t* w, uint64_t stride, int row0, int n_rows, int n_spans,
                                   const unsigned char* act, float* part, int pitch) {
  const auto row_of = [&](int d) { return w + static_cast<uint64_t>(row0 + d) * stride; };
  const auto act_of = [&](int) { return act; };
  block_partials<Dec, kThreads, kUnroll, decltype(row_of), decltype(act_of), true>(n_rows, n_spans, row_of, act_of,
                                                                                    part, pitch);
}

// sm_120's ptxas, left to itself, holds this kernel to 60 registers and spills for TQ1_0; a bound of three blocks a
// multiprocessor (85 registers at most; it takes 80) gives it room. The other archs keep their own choice (no spills).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 1200
#define STRATA_GROUP_BOUNDS __launch_bounds__(kThreads, 3)
#else
#define STRATA_GROUP_BOUNDS __launch_bounds__(kThreads)
#endif

template <class DecA, class DecB>
__device__ __forceinline__ void group_rows_body(const GroupArgs& g, int n_spans, int rows_per_block,
                                                const unsigned char* act) {
  extern __shared__ uint4 shared_words[];
  auto* shared = reinterpret_cast<unsigned char*>(shared_words);
  const BlockMatrix bm = block_matrix(g, static_cast<int>(blockIdx.x));
  const int row0 = (static_cast<int>(blockIdx.x) - bm.first_block) * rows_per_block;
  const int n_rows = min(rows_per_block, bm.rows - row0);
  // The block's weight rows (consecutive) are the model's: on their way to L2 before the previous kernel ends.
  prefetch_l2<kThreads>(bm.w + static_cast<uint64_t>(row0) * bm.stride, static_cast<uint64_t>(n_rows) * bm.stride);
  wait_for_inputs();
  start_dependents();
  // The Q8_1 row is read where it is, its loads issued beside the weights': copying it into shared memory first
  // added a round trip and, for long rows, more bytes than the weights (13.8 KB a block for the 4096 one-row blocks
  // of a 12288 x 4096 product; on the H100 that product took 22.0 us staged, 18.5 us in place, and every other
  // one-token product shape 4-10% less).
  float* part = reinterpret_cast<float*>(shared);
  const int pitch = partial_pitch(n_spans);
  if constexpr (std::is_same_v<DecA, DecB>) {
    matrix_rows<DecA>(bm.w, bm.stride, row0, n_rows, n_spans, act, part, pitch);
  } else {
    if (bm.second) {
      matrix_rows<DecB>(bm.w, bm.stride, row0, n_rows, n_spans, act, part, pitch);
    } else {
      matrix_rows<DecA>(bm.w, bm.stride, row0, n_rows, n_spans, act, part, pitch);
    }
  }
  __syncthreads();
  float* dst = bm.dst;
  const float* bias = bm.bias;
  block_reduce<kThreads>(n_rows, n_spans, part, pitch, [&](int d, float v) {
    dst[row0 + d] = bias != nullptr ? add_x86(v, bias[row0 + d]) : v;  // the ADD (op_elementwise.cu)
  });
}

template <class DecA, class DecB>
__global__ void STRATA_GROUP_BOUNDS group_rows_kernel(GroupArgs g, int n_spans, int rows_per_block,
                                                      const unsigned char* act) {
  group_rows_body<DecA, DecB>(g, n_spans, rows_per_block, act);
}

// IQ3_XXS's: at the register count sm_90's ptxas picks for it without a block count (32), its Q8_1 row read in
// place spills 4 bytes; a bound of two blocks a multiprocessor gives it room (80 registers).
template <class DecA, class DecB>
__global__ void __launch_bounds__(kThreads, 2) group_rows_kernel_wide(GroupArgs g, int n_spans, int rows_per_block,
                                                                      const unsigned char* act) {
  group_rows_body<DecA, DecB>(g, n_spans, rows_per_block, act);
}

// A window of 2 to kMaxWindowTokens tokens: the same blocks and partials, each weight span decoded once for all the
// window's tokens (block_partials_window), each token's partials in its own plane of shared memory and reduced as
// the one-token kernel reduces them: every output has the bits of a one-token pass. (The warp-per-row kernel that
// windows took before read the weights once too, but a warp per row and no loads in flight across rows: a 4-token
// window's q, k, v and o products took 2.45 times one token's on the H100.)
template <class DecA, class DecB>
__device__ __forceinline__ void group_window_body(const WindowArgs& wa, int n_spans, int rows_per_block,
                                                  const unsigned char* act) {
  extern __shared__ uint4 shared_words[];
  const BlockMatrix bm = block_matrix(wa.g, static_cast<int>(blockIdx.x));
  const int row0 = (static_cast<int>(blockIdx.x) - bm.first_block) * rows_per_block;
  const int n_rows = min(rows_per_block, bm.rows - row0);
  prefetch_l2<kThreads>(bm.w + static_cast<uint64_t>(row0) * bm.stride, static_cast<uint64_t>(n_rows) * bm.stride);
  wait_for_inputs();
  start_dependents();
  float* part = reinterpret_cast<float*>(shared_words);
  const int pitch = partial_pitch(n_spans), plane = rows_per_block * pitch;
  const auto rows_of = [&](auto dec) {
    using Dec = decltype(dec);
    const auto row_of = [&](int d) { return bm.w + static_cast<uint64_t>(row0 + d) * bm.stride; };
    block_partials_window<Dec, kThreads, kUnroll>(n_rows, n_spans, row_of, act, wa.act_stride, wa.n_tok, part, pitch,
                                                  plane);
  };
  if constexpr (std::is_same_v<DecA, DecB>) {
    rows_of(DecA{});
  } else {
    if (bm.second) {
      rows_of(DecB{});
    } else {
      rows_of(DecA{});
    }
  }
  __syncthreads();
  const int64_t dst_stride = block_dst_stride(wa, static_cast<int>(blockIdx.x));
  for (int t = 0; t < wa.n_tok; ++t) {
    float* dst = bm.dst + static_cast<int64_t>(t) * dst_stride;
    const float* bias = bm.bias;
    block_reduce<kThreads>(n_rows, n_spans, part + t * plane, pitch, [&](int d, float v) {
      dst[row0 + d] = bias != nullptr ? add_x86(v, bias[row0 + d]) : v;  // the ADD (op_elementwise.cu)
    });
  }
}

// A bound of two blocks a multiprocessor (three on sm_120, as STRATA_GROUP_BOUNDS): left to itself sm_90's ptxas
// held IQ4_NL's window kernel to 40 registers and spilled 4 bytes (as group_rows_kernel_wide's note says of IQ3_XXS).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 1200
#define STRATA_WINDOW_BOUNDS __launch_bounds__(kThreads, 3)
#else
#define STRATA_WINDOW_BOUNDS __launch_bounds__(kThreads, 2)
#endif
template <class DecA, class DecB>
__global__ void STRATA_WINDOW_BOUNDS group_window_kernel(WindowArgs wa, int n_spans, int rows_per_block,
                                                        const unsigned char* act) {
  group_window_body<DecA, DecB>(wa, n_spans, rows_per_block, act);
}

int shared_bytes(int n_spans, int rows_per_block, int n_tok = 1) {
  return n_tok * rows_per_block * partial_pitch(n_spans) * static_cast<int>(sizeof(float));
}

// Rows per block: two items per thread where the matrices are large, fewer rows (more, lighter blocks) until
// there are at least two blocks per multiprocessor.
int rows_per_block_for(int n_spans, int64_t total_rows, int sms) {
  int rb = std::clamp(kThreads * kUnroll / n_spans, 1, kMaxRowsPerBlock);
  while (rb > 1 && (total_rows + rb - 1) / rb < 2 * static_cast<int64_t>(sms)) rb /= 2;
  return rb;
}

bool mixed_pair(const RowGroup& g) {
  for (int m = 0; m < g.n; ++m) {
    if (g.type[m] != static_cast<uint32_t>(GgmlType::Q4_K) && g.type[m] != static_cast<uint32_t>(GgmlType::Q6_K)) {
      return false;
    }
  }
  return true;
}

// The Q8_1 rows of src1's tokens (one, or a window's), through the context's cache (q, k and v share them with
// later MUL_MATs).
const unsigned char* quantized_rows(Context& ctx, const strata_tensor& x) {
  const int64_t n_in = x.ne[0], n_tok = x.ne[1];
  void* act =
      ctx.scratch(ScratchSlot::ActQ8, static_cast<uint64_t>(n_in / 32) * kQ8BlockBytes * static_cast<uint64_t>(n_tok));
  QuantizedActivation& cached = ctx.quantized();
  if (cached.src != x.data || cached.n_in != n_in || cached.n_tok != n_tok || cached.row_stride != x.nb[1]) {
    launch_quantize_q8_1(ctx, static_cast<const float*>(x.data), static_cast<int64_t>(x.nb[1] / sizeof(float)), n_in,
                         n_tok, act);
    cached = {x.data, n_in, n_tok, x.nb[1]};
  }
  return static_cast<const unsigned char*>(act);
}

// Which of the group's products (ops products[0..n)) `op` adds a bias to in place, or -1: an ADD whose src0 and
// dst are that product's output, whose src1 is one F32 row of its width apart from every output, for a product
// without a bias yet (the ADD was checked with the list: its rows are contiguous).
int bias_of(const strata_op& op, const strata_op* products, const RowGroup& g) {
  const strata_tensor &a = op.src[0], &b = op.src[1];
  if (op.kind != STRATA_OP_ADD || !same_tensor(a, op.dst) || b.type != static_cast<uint32_t>(GgmlType::F32) ||
      format::row_count(b) != 1 || b.ne[0] != a.ne[0]) {
    return -1;
  }
  for (int m = 0; m < g.n; ++m) {
    if (!same_tensor(a, products[m].dst) || g.bias[m] != nullptr) continue;
    for (int k = 0; k < g.n; ++k) {
      if (!disjoint(b, products[k].dst)) return -1;
    }
    return m;
  }
  return -1;
}

}  // namespace

bool launch_mul_mat_rows(Context& ctx, const RowGroup& group, int n_spans, const unsigned char* act, int n_tok,
                         uint64_t act_stride) {
  if (group.n < 1 || group.n > kMaxGroupMats || n_spans < 1 || n_tok < 1 || n_tok > kMaxWindowTokens) return false;
  bool same = true;
  for (int m = 1; m < group.n; ++m) same = same && group.type[m] == group.type[0];
  if (!same && !mixed_pair(group)) return false;
  int64_t total = 0;
  for (int m = 0; m < group.n; ++m) total += group.rows[m];
  if (total == 0) return true;
  int rb = rows_per_block_for(n_spans, total, ctx.props().multiProcessorCount);
  while (rb > 1 && shared_bytes(n_spans, rb, n_tok) > kMaxSharedBytes) rb /= 2;
  const int smem = shared_bytes(n_spans, rb, n_tok);
  if (smem > kMaxSharedBytes) return false;

  GroupArgs args{};
  args.n = group.n;
  int blocks = 0;
  for (int m = 0; m < group.n; ++m) {
    args.w[m] = group.w[m];
    args.stride[m] = group.stride[m];
    args.rows[m] = group.rows[m];
    args.dst[m] = group.dst[m];
    args.bias[m] = group.bias[m];
    args.second[m] = group.type[m] == static_cast<uint32_t>(GgmlType::Q6_K);
    args.first_block[m] = blocks;
    blocks += (group.rows[m] + rb - 1) / rb;
  }
  // The group's kernel for its types, the q4_K/q6_K pair's or one decoder's: launch(DecA{}, DecB{}).
  const auto for_types = [&](const char* what, auto launch) -> bool {
    if (!same) {
      launch(DecodeQ4_K{}, DecodeQ6_K{});
      check_launch(what);
      return true;
    }
    return with_decoder(group.type[0], [&](auto dec) {
      launch(dec, dec);
      check_launch(what);
    });
  };
  if (n_tok > 1) {
    WindowArgs wa{args, {}, act_stride, n_tok};
    for (int m = 0; m < group.n; ++m) wa.dst_stride[m] = group.dst_stride[m];
    return for_types("MUL_MAT (window)", [&](auto a, auto b) {
      launch_dependent(ctx, group_window_kernel<decltype(a), decltype(b)>, blocks, kThreads, smem, wa, n_spans, rb, act);
    });
  }
  return for_types("MUL_MAT (one token)", [&](auto a, auto b) {
    using DecA = decltype(a);
    using DecB = decltype(b);
    if constexpr (std::is_same_v<DecA, DecodeIQ3_XXS>) {
      launch_dependent(ctx, group_rows_kernel_wide<DecA, DecB>, blocks, kThreads, smem, args, n_spans, rb, act);
    } else {
      launch_dependent(ctx, group_rows_kernel<DecA, DecB>, blocks, kThreads, smem, args, n_spans, rb, act);
    }
  });
}

size_t fuse_mul_mat_group(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const strata_op& first = ops[i];
  if (first.kind != STRATA_OP_MUL_MAT || first.src[1].ne[1] < 1 || first.src[1].ne[1] > kMaxWindowTokens) return 0;
  const strata_tensor& x = first.src[1];
  RowGroup group{};
  for (size_t j = i; j < n && group.n < kMaxGroupMats; ++j) {
    const strata_op& op = ops[j];
    if (op.kind != STRATA_OP_MUL_MAT || !same_tensor(op.src[1], x) || decoder_alignment(op.src[0].type) == 0) break;
    // An output over the shared input would change what the later matrices read.
    if (!disjoint(op.dst, x)) break;
    const int m = group.n++;
    group.w[m] = static_cast<const uint8_t*>(op.src[0].data);
    group.stride[m] = op.src[0].nb[1];
    group.rows[m] = static_cast<int>(op.src[0].ne[1]);
    group.type[m] = op.src[0].type;
    group.dst[m] = static_cast<float*>(op.dst.data);
    group.dst_stride[m] = static_cast<int64_t>(op.dst.nb[1] / sizeof(float));
  }
  if (group.n < 2) return 0;
  // Only matrices the one launch can take together: a same-type prefix, or a q4_K/q6_K mix.
  while (group.n >= 2) {
    bool same = true;
    for (int m = 1; m < group.n; ++m) same = same && group.type[m] == group.type[0];
    if (same || mixed_pair(group)) break;
    --group.n;
  }
  if (group.n < 2) return 0;
  // The biases' in-place ADDs right after the products, in any order, one per output at most.
  size_t adds = 0;
  for (size_t j = i + static_cast<size_t>(group.n); j < n && adds < static_cast<size_t>(group.n); ++j, ++adds) {
    const int m = bias_of(ops[j], ops + i, group);
    if (m < 0) break;
    group.bias[m] = static_cast<const float*>(ops[j].src[1].data);
  }
  const int n_spans = static_cast<int>(x.ne[0] / 32);
  // The outputs may hold rows quantized earlier (never x: checked above).
  forget_quantized_writes(ctx, ops + i, static_cast<size_t>(group.n) + adds);
  const unsigned char* act = quantized_rows(ctx, x);
  const int n_tok = static_cast<int>(x.ne[1]);
  if (!launch_mul_mat_rows(ctx, group, n_spans, act, n_tok, static_cast<uint64_t>(n_spans) * kQ8BlockBytes)) return 0;
  return static_cast<size_t>(group.n) + adds;
}

}  // namespace strata::gpu
