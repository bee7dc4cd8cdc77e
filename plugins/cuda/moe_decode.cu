// The decode path of MOE_ROUTED (moe_decode.cuh).
//
// Both kernels compute their row dots block-wide (matvec_block.cuh: every span partial with several loads in
// flight per thread, then the canonical chains and tree per dot). A kernel's dependent global round trips are
// what its time is made of at one token, so each kernel issues its independent loads together.
// gate_up_kernel: block (c, p) owns rows 32c..32c+31 of pair p = t * k + j's gate and up matrices (64 dots). It
// loads token t's x with the pair's id, quantizes x to Q8_1 in shared memory itself (32 lanes a block, the bits of
// the Q8_1 launch, so the op needs no launch for it) while the expert's matrix pointers load; then h = act(g + bg,
// u + bu) for the 32 rows (the form's biases and activation, expert_form.cuh) and their Q8_1 block, again by 32
// lanes. One more block per token (row n_pairs + t of the
// grid) writes the token's route table for down_kernel: its valid pairs in ascending expert id (stable for equal
// ids) with their down matrices and route weights, so down_kernel reaches its weights in one round trip.
// down_kernel: block (c, t) owns `rows` output rows (8 unless shared memory limits it) of token t; its dots are
// (row, expert) for the token's experts in the table's order, each + the form's down bias (y); then per row
// out = w1 * y1; out = out + w2 * y2; ... in that order.
// Precomputed rows (MOE_ROUTED's src3): a pair whose expert entry has no gate matrix is computed elsewhere. Its
// gate_up block does nothing, the route table lists it by its src3 column instead of a dot, and down_kernel takes
// that column's value in the pair's place of the sum; only the computed pairs have dots. With a ready flag (i[0] =
// 1: the host's pool is still writing src3 while the op runs), the down blocks of a token with precomputed pairs
// leave their dots in scratch instead of summing; one thread then waits for the flag (a single poller: the flag is
// in host memory, across the bus), and sum_kernel adds each such token's values in the same order with the same
// operations, src3 read by volatile loads (the buffer is rewritten layer after layer). So the device's experts and
// the host's overlap, and the bytes are the one-kernel sum's.
// Rows out (MOE_ROUTED's i[2] = 1): down_kernel writes each computed pair's weighted value, the very term its sum
// adds, to dst's column t * k + j, and sums nothing.
#include <type_traits>

#include "act_quant.cuh"
#include "dependent_launch.cuh"
#include "fusion_match.hpp"
#include "matvec_block.cuh"
#include "moe_decode.cuh"
#include "ops.hpp"
#include "scratch_carve.hpp"
#include "strata/format/flag_ops.hpp"
#include "strata/format/moe_routed_modes.hpp"
#include "strata/format/types.hpp"

namespace strata::gpu {
namespace {

constexpr int kMaxTokens = 8;
constexpr int kMaxK = 16;
constexpr int kQ8Group = 32;                      // lanes that quantize one Q8_1 block together
constexpr int kGateUpRows = 32;                   // one Q8_1 block of h
constexpr int kGateUpDots = 2 * kGateUpRows;      // gate and up
constexpr int kGateUpThreads = kGateUpDots * kAccumulators;  // the reduce in one pass
constexpr int kGateUpUnroll = 4;
constexpr int kGateUpGroups = kGateUpThreads / kQ8Group;
constexpr int kXRounds = 4;                       // x blocks per group loaded at once (n_embd 2048: all of them)
constexpr int kDownMaxRows = 8;                   // output rows per block (fewer where shared memory is short)
constexpr int kDownThreads = 512;
// Blocks a multiprocessor holds at once, as the launch bounds promise ptxas: two, a 64-register cap at 512 threads.
// sm_120's ptxas spills 8 bytes under that cap for the Q4_K and IQ4_XS kernels (sm_86/89/90 do not), so there the
// bound is one block and the registers are ptxas's choice. The arithmetic is the same; only the allocation moves.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 1200
constexpr int kMoeMinBlocks = 1;
#else
constexpr int kMoeMinBlocks = 2;
#endif
constexpr int kDownUnroll = 3;                    // 8 rows x 8 experts x 24 spans: one batch of loads
constexpr int kMaxSharedBytes = 48 * 1024;
static_assert(kMaxK <= kWarp, "one lane per pair in write_token_routes");
static_assert(32 % kDownMaxRows == 0, "n_embd is a multiple of 32, so blocks of rows never fall short");

struct Routes {
  const int32_t* ids;
  int64_t ids_stride;
  const float* weights;
  int64_t weights_stride;
  int k;
  int n_expert;
  const strata_expert_weights* experts;
};

// A token's valid pairs in ascending expert id (stable for equal ids), position q = 0..count-1: what down_kernel
// needs of the routes. The computed pairs' dots are listed compacted (c = 0..computed-1, in q order).
struct alignas(16) TokenRoutes {
  const uint8_t* down[kMaxK];  // the c-th computed pair's down matrix
  float weight[kMaxK];         // its route weight
  int act[kMaxK];              // its j (which of the token's h rows)
  int expert[kMaxK];           // its expert id (the row of the form's down bias)
  int source[kMaxK];           // position q: c (its dots) when computed, -1 - j (src3 column t * k + j) when not
  int count;                   // positions 0..count-1 are written
  int computed;                // computed pairs 0..computed-1 are written
};
constexpr int kRouteVecs = static_cast<int>(sizeof(TokenRoutes) / sizeof(uint4));
static_assert(sizeof(TokenRoutes) % sizeof(uint4) == 0, "copied as 16-byte words");

__device__ inline int valid_id(const Routes& r, int t, int j) {
  const int32_t id = r.ids[static_cast<int64_t>(t) * r.ids_stride + j];
  return id >= 0 && id < r.n_expert ? id : -1;
}

// Token t's table by one warp, lane j holding pair j: a pair's place is the number of valid pairs before it in
// (id, j) order, the order of a stable sort by id; a computed pair's dot index counts the computed ones only.
__device__ inline void write_token_routes(const Routes& r, int t, TokenRoutes& out) {
  const int lane = static_cast<int>(threadIdx.x);
  const int id = lane < r.k ? valid_id(r, t, lane) : -1;
  const float w = lane < r.k ? r.weights[static_cast<int64_t>(t) * r.weights_stride + lane] : 0.0f;
  const uint8_t* down = nullptr;
  int computed_here = 0;  // 1 for a valid pair whose entry has a gate matrix
  if (id >= 0) {
    const strata_expert_weights& e = r.experts[id];
    down = static_cast<const uint8_t*>(e.down);
    computed_here = e.gate != nullptr ? 1 : 0;
  }
  int place = 0, count = 0, dot = 0, computed = 0;
  for (int j = 0; j < r.k; ++j) {
    const int other = shfl(id, j);
    const int other_computed = shfl(computed_here, j);
    const int before = other >= 0 && (other < id || (other == id && j < lane)) ? 1 : 0;
    count += other >= 0 ? 1 : 0;
    computed += other_computed;
    place += before;
    dot += before & other_computed;
  }
  if (id >= 0 && computed_here != 0) {
    out.down[dot] = down;
    out.weight[dot] = w;
    out.act[dot] = lane;
    out.expert[dot] = id;
    out.source[place] = dot;
  } else if (id >= 0) {
    out.source[place] = -1 - lane;
  }
  if (lane == 0) {
    out.count = count;
    out.computed = computed;
  }
}

// Q4_K rows known to start at 16-byte boundaries (checked once per block): DecodeQ4_K's three 16-byte loads
// only. Without the byte-load fallback's registers, four spans' loads stay in flight per thread at 64 registers.
struct DecodeQ4_KAligned : DecodeQ4_K {
  __device__ static void decode(const uint8_t* b, int s, Span& o) { decode_aligned(b, s, o); }
};

// The decoder of Dec for 16-byte aligned rows (Dec itself where it has no such variant).
template <class Dec>
struct Aligned16 {
  using type = Dec;
};
template <>
struct Aligned16<DecodeQ4_K> {
  using type = DecodeQ4_KAligned;
};

// Spans in flight per thread in the kernels' block_partials: at most `most`, as many as 64 registers hold without
// spills.
template <class Dec>
constexpr int spans_in_flight(int most) {
  if constexpr (std::is_same_v<Dec, DecodeQ4_K>) {
    return most < 2 ? most : 2;  // the unaligned fallback (byte loads)
  } else if constexpr (std::is_same_v<Dec, DecodeQ3_K> || std::is_same_v<Dec, DecodeIQ4_NL> ||
                       std::is_same_v<Dec, DecodeIQ1_M> || std::is_same_v<Dec, DecodeIQ2_S> ||
                       std::is_same_v<Dec, DecodeIQ3_S>) {
    return most < 2 ? most : 2;  // four in flight spill (IQ3_S: a stack frame) in gate_up_kernel
  } else if constexpr (std::is_same_v<Dec, DecodeMXFP4>) {
    return 1;  // 17-byte blocks read by byte loads: two spans in flight spill in down_kernel
  } else {
    return most;
  }
}

// f(Aligned16<Dec>::type{}) when every row base (`bases`, or-ed) and the row stride are multiples of 16, else
// f(Dec{}). Block-uniform, so the branch costs nothing.
template <class Dec, class F>
__device__ inline void with_row_decoder(uintptr_t bases, uint64_t stride, F&& f) {
  using Fast = typename Aligned16<Dec>::type;
  if constexpr (std::is_same_v<Fast, Dec>) {
    f(Dec{});
  } else if (((bases | static_cast<uintptr_t>(stride)) & 15u) == 0) {
    f(Fast{});
  } else {
    f(Dec{});
  }
}

// group_store_q8_1 for the kernels below: act_quant.cuh declares it in the device pass only, and the host pass
// also reads these kernels' bodies.
__device__ inline void store_q8_1(float v, int i, unsigned char* blk) {
#ifdef STRATA_DEVICE_PASS
  group_store_q8_1(v, i, blk);
#endif
}

template <class Dec>
__global__ void __launch_bounds__(kGateUpThreads, kMoeMinBlocks) gate_up_kernel(Routes routes, const float* x, int64_t x_stride,
                                                                 int n_spans, uint64_t w_stride, int n_ff,
                                                                 int n_pairs, unsigned char* hq,
                                                                 TokenRoutes* tables, ExpertForm form) {
  extern __shared__ uint4 shared_words[];
  wait_for_inputs();  // before any read of the routes or x and any return (dependent_launch.cuh)
  start_dependents();
  const int p = static_cast<int>(blockIdx.y);
  if (p >= n_pairs) {  // the route table of token p - n_pairs, by the first warp of one block
    if (blockIdx.x == 0 && threadIdx.x < kWarp) write_token_routes(routes, p - n_pairs, tables[p - n_pairs]);
    return;
  }
  auto* act = reinterpret_cast<unsigned char*>(shared_words);  // the token's Q8_1 row of x
  float* part = reinterpret_cast<float*>(act + staged_act_bytes(n_spans, 1));
  const int pitch = partial_pitch(n_spans);
  float* gu = part + kGateUpDots * pitch;  // [kGateUpDots]: 32 gate dots, then 32 up dots
  const int t = p / routes.k, j = p % routes.k;
  const int group = static_cast<int>(threadIdx.x) / kQ8Group, i = static_cast<int>(threadIdx.x) % kQ8Group;
  // The pair's id and the first kXRounds of x's blocks per group in one round trip: group g holds blocks
  // g, g + kGateUpGroups, ..., lane i value i of each.
  const int id = valid_id(routes, t, j);
  const float* xt = x + static_cast<int64_t>(t) * x_stride;
  // A round: kXRounds blocks of the group, first, first + kGateUpGroups, ..., loaded together, then quantized.
  // Whether a group quantizes a block depends on the group only, so all 32 lanes of a group shuffle together.
  float xv[kXRounds];
  const auto load_round = [&](int first) {
#pragma unroll
    for (int r = 0; r < kXRounds; ++r) {
      const int blk = first + r * kGateUpGroups;
      xv[r] = blk < n_spans ? xt[32 * blk + i] : 0.0f;
    }
  };
  const auto quantize_round = [&](int first) {
#pragma unroll
    for (int r = 0; r < kXRounds; ++r) {
      const int blk = first + r * kGateUpGroups;
      if (blk < n_spans) store_q8_1(xv[r], i, act + blk * kQ8BlockBytes);
    }
  };
  load_round(group);
  if (id < 0) return;  // the whole block: the pair is left out
  // The matrix pointers load while x is quantized.
  const strata_expert_weights& e = routes.experts[id];
  const auto* gate = static_cast<const uint8_t*>(e.gate);
  const auto* up = static_cast<const uint8_t*>(e.up);
  quantize_round(group);
  // Wider rows round after round (GLM-4.5's 4096: two rounds, not five round trips; DeepSeek-V3's 7168: four, not
  // eleven). Eight blocks a round spilled a few types' registers.
  for (int first = group + kXRounds * kGateUpGroups; first < n_spans; first += kXRounds * kGateUpGroups) {
    load_round(first);
    quantize_round(first);
  }
  // A precomputed pair (no gate matrix; its row is in src3): the whole block leaves. Tested after x's Q8_1, so a
  // computed pair's quantization does not wait for the pointer's load.
  if (gate == nullptr) return;
  __syncthreads();
  const uint64_t first_row = static_cast<uint64_t>(blockIdx.x) * kGateUpRows * w_stride;
  with_row_decoder<Dec>(reinterpret_cast<uintptr_t>(gate) | reinterpret_cast<uintptr_t>(up), w_stride, [&](auto dec) {
    using D = decltype(dec);
    block_partials<D, kGateUpThreads, spans_in_flight<D>(kGateUpUnroll)>(
        kGateUpDots, n_spans,
        [&](int d) {
          return (d < kGateUpRows ? gate : up) + first_row + static_cast<uint64_t>(d % kGateUpRows) * w_stride;
        },
        [&](int) { return static_cast<const unsigned char*>(act); }, part, pitch);
  });
  __syncthreads();
  block_reduce<kGateUpThreads>(kGateUpDots, n_spans, part, pitch, [&](int d, float v) { gu[d] = v; });
  __syncthreads();
  // h for the block's 32 rows and its Q8_1 block, lane i of the first group holding row i.
  if (threadIdx.x >= static_cast<unsigned>(kQ8Group)) return;
  const int n_blocks = n_ff / kGateUpRows;
  unsigned char* blk = hq + (static_cast<uint64_t>(p) * static_cast<uint64_t>(n_blocks) + blockIdx.x) * kQ8BlockBytes;
  float g = gu[i], u = gu[kGateUpRows + i];
  if (form.bias.gate != nullptr || form.bias.up != nullptr) {
    // The id read again (a cached load) rather than held across the dots, whose registers are all in use.
    const int e = valid_id(routes, t, j), row = static_cast<int>(blockIdx.x) * kGateUpRows + i;
    g = add_bias(g, form.bias.gate, e, n_ff, row);
    u = add_bias(u, form.bias.up, e, n_ff, row);
  }
  store_q8_1(expert_act(form.act, g, u), i, blk);
}

int gate_up_shared_bytes(int n_spans) {
  return staged_act_bytes(n_spans, 1) + (kGateUpDots * partial_pitch(n_spans) + kGateUpDots) * static_cast<int>(sizeof(float));
}

// Block (c, t): output rows rows * c .. of token t (rows a power of two up to kDownMaxRows, dividing n_embd).
// Dots: d = c * rows + row, the c-th computed pair of the token's table against output row row. `pre`: src3 (NULL
// when absent), pre_stride floats between its columns. `rows_out`: dst holds a column per pair, nothing is summed.
template <class Dec>
__global__ void __launch_bounds__(kDownThreads, kMoeMinBlocks) down_kernel(const TokenRoutes* tables, const unsigned char* hq,
                                                              int k, int n_spans, int rows_log2, uint64_t w_stride,
                                                              const float* pre, int64_t pre_stride, float* late_y,
                                                              int64_t n_embd, float* dst, int64_t dst_stride,
                                                              bool rows_out, const float* down_bias,
                                                              const float* addend, int64_t addend_stride) {
  extern __shared__ uint4 shared_words[];
  __shared__ TokenRoutes routes;
  __shared__ float y[kDownMaxRows * kMaxK];
  __shared__ float pre_y[kDownMaxRows * kMaxK];  // [q * rows + row]: the precomputed pairs' values
  wait_for_inputs();  // dependent_launch.cuh
  start_dependents();
  const int t = static_cast<int>(blockIdx.y);
  const int rows = 1 << rows_log2;
  const int row0 = static_cast<int>(blockIdx.x) * rows;
  const int tid = static_cast<int>(threadIdx.x);
  // The token's table and its k rows of h (Q8_1, in pair order j) in one round trip: the table's load is issued
  // before the staging loop's first store waits for its own load.
  const bool route_thread = tid < kRouteVecs;
  uint4 route_vec{};
  if (route_thread) route_vec = reinterpret_cast<const uint4*>(tables + t)[tid];
  auto* acts = reinterpret_cast<unsigned char*>(shared_words);
  const int act_row = n_spans * kQ8BlockBytes;
  stage_bytes<kDownThreads>(acts, hq + static_cast<uint64_t>(t) * static_cast<uint64_t>(k) * act_row, k * act_row);
  if (route_thread) reinterpret_cast<uint4*>(&routes)[tid] = route_vec;
  float* part = reinterpret_cast<float*>(acts + staged_act_bytes(n_spans, k));
  const int pitch = partial_pitch(n_spans);
  __syncthreads();
  const int n = routes.count, n_dot = routes.computed;
  // Thread q * rows + row stages the value of position q for output row row when q is precomputed. (Holding it in
  // a register across the dots would spill; the other threads start the dots meanwhile.)
  const int pre_q = tid >> rows_log2;
  const bool late = late_y != nullptr;  // src3 is read after its flag, by sum_kernel
  if (!late && pre_q < n && routes.source[pre_q] < 0) {
    const int j = -1 - routes.source[pre_q];
    // Without src3 (rows out never reads it; otherwise the caller's error) the value is NaN, never a NULL load.
    pre_y[tid] = pre != nullptr ? pre[(static_cast<int64_t>(t) * k + j) * pre_stride + row0 + (tid & (rows - 1))]
                                : __int_as_float(0x7fc00000);
  }
  uintptr_t bases = 0;
  for (int c = 0; c < n_dot; ++c) bases |= reinterpret_cast<uintptr_t>(routes.down[c]);
  with_row_decoder<Dec>(bases, w_stride, [&](auto dec) {
    using D = decltype(dec);
    block_partials<D, kDownThreads, spans_in_flight<D>(kDownUnroll)>(
        n_dot << rows_log2, n_spans,
        [&](int d) {
          return routes.down[d >> rows_log2] + static_cast<uint64_t>(row0 + (d & (rows - 1))) * w_stride;
        },
        [&](int d) { return static_cast<const unsigned char*>(acts + routes.act[d >> rows_log2] * act_row); },
        part, pitch);
  });
  __syncthreads();
  // The form's down bias joins each dot here, before the weight, the sums and late_y (the reference's y).
  block_reduce<kDownThreads>(n_dot << rows_log2, n_spans, part, pitch, [&](int d, float v) {
    y[d] = add_bias(v, down_bias, routes.expert[d >> rows_log2], n_embd, row0 + (d & (rows - 1)));
  });
  __syncthreads();
  if (rows_out) {  // block-uniform
    if (tid < (n_dot << rows_log2)) {
      const int c = tid >> rows_log2;
      dst[(static_cast<int64_t>(t) * k + routes.act[c]) * dst_stride + row0 + (tid & (rows - 1))] =
          routes.weight[c] * y[tid];
    }
    return;
  }
  if (late && n > n_dot) {  // block-uniform: the token has precomputed pairs; sum_kernel adds them up
    if (tid < (n_dot << rows_log2)) {
      late_y[(static_cast<int64_t>(t) * kMaxK + (tid >> rows_log2)) * n_embd + row0 + (tid & (rows - 1))] = y[tid];
    }
    return;
  }
  if (tid >= rows) return;
  float acc = 0.0f;
  for (int q = 0; q < n; ++q) {
    const int c = routes.source[q];
    const float v = c >= 0 ? routes.weight[c] * y[(c << rows_log2) + tid] : pre_y[(q << rows_log2) + tid];
    acc = q == 0 ? v : acc + v;
  }
  // fuse_moe_add: the ADD that follows, dst = dst + addend, by its operation.
  if (addend != nullptr) acc = add_x86(acc, addend[static_cast<int64_t>(t) * addend_stride + row0 + tid]);
  dst[static_cast<int64_t>(t) * dst_stride + row0 + tid] = acc;
}

// One thread waits for src3's ready flag in host memory (after the down blocks, stream order). `stamp` (backend 1.5,
// or NULL): the clock as it starts waiting, when the device's own experts are done.
__global__ void ready_wait_kernel(const volatile int32_t* flag, unsigned long long* stamp) {
  if (stamp != nullptr) *stamp = clock_ns();
  while (*flag == 0) {
  }
  __threadfence_system();
}

// Row r of token t, for tokens with precomputed pairs: down_kernel's sum over the token's table, from the dots it
// left in late_y and src3's columns.
__global__ void sum_kernel(const TokenRoutes* tables, const float* late_y, int64_t n_embd, int k, const float* pre,
                           int64_t pre_stride, float* dst, int64_t dst_stride) {
  const int t = static_cast<int>(blockIdx.y);
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const TokenRoutes& routes = tables[t];
  const int n = routes.count;
  if (r >= n_embd || n == routes.computed) return;
  float acc = 0.0f;
  for (int q = 0; q < n; ++q) {
    const int c = routes.source[q];
    float v;
    if (c >= 0) {
      v = routes.weight[c] * late_y[(static_cast<int64_t>(t) * kMaxK + c) * n_embd + r];
    } else {
      const volatile float* col = pre + (static_cast<int64_t>(t) * k + (-1 - c)) * pre_stride;
      v = col[r];
    }
    acc = q == 0 ? v : acc + v;
  }
  dst[static_cast<int64_t>(t) * dst_stride + r] = acc;
}

int down_shared_bytes(int n_spans, int k, int rows) {
  return staged_act_bytes(n_spans, k) + rows * k * partial_pitch(n_spans) * static_cast<int>(sizeof(float));
}

// down_kernel's static shared memory (the token's table, y and pre_y), which counts against the same limit.
constexpr int kDownStaticBytes = static_cast<int>(sizeof(TokenRoutes)) + 2 * kDownMaxRows * kMaxK * static_cast<int>(sizeof(float));

// The most rows per down block (a power of two up to kDownMaxRows) whose shared memory fits; -1 when none does.
int down_rows_log2(int n_spans, int k) {
  for (int lg = 3; lg >= 0; --lg) {
    if ((1 << lg) <= kDownMaxRows && down_shared_bytes(n_spans, k, 1 << lg) + kDownStaticBytes <= kMaxSharedBytes) {
      return lg;
    }
  }
  return -1;
}

// The decoders the decode path is built for: every expert type of the files users run (the K-quants, the legacy
// 32-value types, which llama.cpp's recipes fall back to where a row is not a multiple of 256 values: GLM-4.5's
// 1408-value down rows are Q5_0 under Q4_K_M, and the i-quants of the 1- to 3-bit recipes); the ternary types take
// the general pipeline. A type left out costs five more launches a MoE layer at one token and keeps the hybrid
// path's windows from taking the pool's rows behind a ready flag (HybridMoe::flagged_rows_supported).
using DecodePathTypes =
    OneOf<GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
          GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ2_XXS,
          GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
          GgmlType::MXFP4>;
template <class F>
bool with_decode_type(uint32_t type, F&& f) {
  return with_decoder_in<DecodePathTypes>(type, f);
}

bool has_decode_type(uint32_t type) {
  return with_decode_type(type, [](auto) {});
}

// down_kernel's rows_log2 when the decode path takes op (a checked MOE_ROUTED), else -1.
int decode_rows_log2(const strata_op& op) {
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const int64_t n_tok = op.src[0].ne[1], k = op.src[1].ne[0];
  if (n_tok < 1 || n_tok > kMaxTokens || k < 1 || k > kMaxK) return -1;
  if (table.gate_type != table.up_type || !has_decode_type(table.gate_type) || !has_decode_type(table.down_type)) {
    return -1;
  }
  if (table.n_ff % kGateUpRows != 0 || table.n_embd % 32 != 0) return -1;
  const int n_embd_spans = static_cast<int>(table.n_embd / 32), n_ff_spans = static_cast<int>(table.n_ff / 32);
  if (gate_up_shared_bytes(n_embd_spans) > kMaxSharedBytes) return -1;
  return down_rows_log2(n_ff_spans, static_cast<int>(k));
}

}  // namespace

bool moe_routed_decode_takes(const strata_op& op) { return decode_rows_log2(op) >= 0; }

bool run_moe_routed_decode(Context& ctx, const strata_op& op, const float* addend, int64_t addend_stride) {
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor &x = op.src[0], &ids = op.src[1], &wt = op.src[2], &pre = op.src[3], &d = op.dst;
  const int64_t n_tok = x.ne[1], k = ids.ne[0];
  const int rows_log2 = decode_rows_log2(op);
  if (rows_log2 < 0) return false;
  const int n_embd_spans = static_cast<int>(table.n_embd / 32), n_ff_spans = static_cast<int>(table.n_ff / 32);

  const int64_t n_embd = table.n_embd, n_ff = table.n_ff, n_pairs = k * n_tok;
  // One scratch buffer: the tokens' route tables, then the pairs' Q8_1 rows of h.
  ScratchCarve carve;
  const uint64_t tables_at = carve.take(static_cast<uint64_t>(n_tok) * sizeof(TokenRoutes));
  const uint64_t hq_at = carve.take(static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_ff / 32) * kQ8BlockBytes);
  const int32_t* ready = format::precomputed_ready(op);
  const uint64_t late_at = ready != nullptr ? carve.take(static_cast<uint64_t>(n_tok) * kMaxK * n_embd * sizeof(float)) : 0;
  auto* base = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::MoeHiddenQ8, carve.size));
  auto* tables = reinterpret_cast<TokenRoutes*>(base + tables_at);
  unsigned char* hq = base + hq_at;
  float* late_y = ready != nullptr ? reinterpret_cast<float*>(base + late_at) : nullptr;
  const Routes routes{static_cast<const int32_t*>(ids.data), static_cast<int64_t>(ids.nb[1] / sizeof(int32_t)),
                      static_cast<const float*>(wt.data),  static_cast<int64_t>(wt.nb[1] / sizeof(float)),
                      static_cast<int>(k),                  static_cast<int>(table.n_expert),
                      table.experts};
  const auto row_stride = [](uint32_t type, int64_t n) {
    return format::row_bytes(static_cast<GgmlType>(type), static_cast<uint64_t>(n));
  };
  const ExpertForm form = expert_form_of(table.form);
  with_decode_type(table.gate_type, [&](auto dec) {
    // Rows n_pairs .. n_pairs + n_tok - 1 of the grid: the tokens' route tables.
    const dim3 grid(static_cast<unsigned>(n_ff / kGateUpRows), static_cast<unsigned>(n_pairs + n_tok));
    launch_dependent(ctx, gate_up_kernel<decltype(dec)>, grid, kGateUpThreads, gate_up_shared_bytes(n_embd_spans),
        routes, static_cast<const float*>(x.data), static_cast<int64_t>(x.nb[1] / sizeof(float)), n_embd_spans,
        row_stride(table.gate_type, n_embd), static_cast<int>(n_ff), static_cast<int>(n_pairs), hq, tables, form);
    check_launch("MOE_ROUTED (decode: Q8_1 of x, gate, up, SwiGLU; route tables)");
  });
  with_decode_type(table.down_type, [&](auto dec) {
    const dim3 grid(static_cast<unsigned>(n_embd >> rows_log2), static_cast<unsigned>(n_tok));
    launch_dependent(ctx, down_kernel<decltype(dec)>, grid, kDownThreads,
                     down_shared_bytes(n_ff_spans, static_cast<int>(k), 1 << rows_log2),
            tables, hq, static_cast<int>(k), n_ff_spans, rows_log2, row_stride(table.down_type, n_ff),
            static_cast<const float*>(pre.data), static_cast<int64_t>(pre.nb[1] / sizeof(float)), late_y, n_embd,
            static_cast<float*>(d.data), static_cast<int64_t>(d.nb[1] / sizeof(float)), format::rows_out(op),
            form.bias.down, addend, addend_stride);
    check_launch("MOE_ROUTED (decode: down and sums)");
  });
  if (ready != nullptr) {
    ready_wait_kernel<<<1, 1, 0, ctx.stream()>>>(ready,
                                                 reinterpret_cast<unsigned long long*>(format::ready_stamp(op)));
    check_launch("MOE_ROUTED (decode: src3's ready flag)");
    constexpr int kSumThreads = 256;
    const dim3 grid(static_cast<unsigned>((n_embd + kSumThreads - 1) / kSumThreads), static_cast<unsigned>(n_tok));
    sum_kernel<<<grid, kSumThreads, 0, ctx.stream()>>>(tables, late_y, n_embd, static_cast<int>(k),
                                                        static_cast<const float*>(pre.data),
                                                        static_cast<int64_t>(pre.nb[1] / sizeof(float)),
                                                        static_cast<float*>(d.data),
                                                        static_cast<int64_t>(d.nb[1] / sizeof(float)));
    check_launch("MOE_ROUTED (decode: sums with src3)");
  }
  return true;
}

size_t fuse_moe_add(Context& ctx, const strata_op* ops, size_t i, size_t n) {
  const strata_op& moe = ops[i];
  if (moe.kind != STRATA_OP_MOE_ROUTED || i + 1 >= n || ops[i + 1].kind != STRATA_OP_ADD) return 0;
  // Sums stored by down_kernel itself: no ready flag (sum_kernel stores those) and no rows out.
  if (!moe_routed_decode_takes(moe) || format::precomputed_ready(moe) != nullptr || format::rows_out(moe)) return 0;
  const strata_op& add = ops[i + 1];
  const strata_tensor &d = moe.dst, &b = add.src[1];
  // In place on the sums, the other operand apart from them: a float row a token, or one row for all (the ADD was
  // checked with the list: src1 of src0's shape or one row, rows contiguous).
  if (!same_tensor(add.src[0], d) || !same_tensor(add.dst, d) || !disjoint(b, d) || b.ne[2] != 1 || b.ne[3] != 1) {
    return 0;
  }
  const bool broadcast = format::row_count(b) == 1;
  forget_quantized_writes(ctx, ops + i, 2);
  if (!run_moe_routed_decode(ctx, moe, static_cast<const float*>(b.data),
                             broadcast ? 0 : static_cast<int64_t>(b.nb[1] / sizeof(float)))) {
    return 0;  // enqueued nothing (takes() said it would run)
  }
  return 2;
}

}  // namespace strata::gpu
