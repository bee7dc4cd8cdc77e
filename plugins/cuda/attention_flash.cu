// ATTENTION's float path (attention_flash.cuh has the definition and the kernels' bodies): the kernels, their
// launches, and the portable kernel for HIP, head sizes above 128 and f32 caches (the same definition with scalar float
// operations in place of the MMAs: its own bits, the same for every window too).
#include <algorithm>

#include "act_quant.cuh"
#include "attention_flash.cuh"
#include "attention_paths.hpp"
#include "canonical_math.cuh"
#include "dependent_launch.cuh"
#include "dynamic_smem.hpp"
#include "ops.hpp"

namespace strata::gpu::attention {
namespace {

using namespace flash;
constexpr int kFlashThreads = flash::kThreads;

#if !defined(STRATA_GPU_HIP)
template <Cache kCache, int kDp, int kBufs>
__global__ void __launch_bounds__(kFlashThreads, 2) attention_flash_tiles(Args a) {
  extern __shared__ __align__(16) unsigned char flash_smem[];
  wait_for_inputs();  // dependent_launch.cuh
  start_dependents();
  tiles_body<kCache, kDp, kBufs>(a, Place{static_cast<int>(threadIdx.x), static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                   static_cast<int>(gridDim.x)},
                          flash_smem);
}

template <Cache kCache, int kDp, int kBufs>
__global__ void __launch_bounds__(kFlashThreads, 1) attention_flash_split(Args a) {
  extern __shared__ __align__(16) unsigned char flash_smem[];
  wait_for_inputs();
  start_dependents();
  split_body<kCache, kDp, kBufs>(a, Place{static_cast<int>(threadIdx.x), static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y),
                                   static_cast<int>(gridDim.x)},
                          flash_smem);
}

template <int kDp, bool kTwo>
__global__ void __launch_bounds__(kFlashThreads) attention_flash_combine(Args a) {
  extern __shared__ __align__(16) unsigned char flash_smem[];
  wait_for_inputs();
  start_dependents();
  const int tid = static_cast<int>(threadIdx.x);
  float v = 0.0f;
  combine_body<kDp, kTwo>(a, Place{tid, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(gridDim.x)},
                    flash_smem, v);
  if (tid >= a.o.head_dim) return;  // whole 32-lane groups (head_dim a multiple of 32 with q8)
  const int t = static_cast<int>(blockIdx.y), h = static_cast<int>(blockIdx.x);
  out_row(a.o, t, h)[tid] = v;
  if (a.q8 != nullptr) {
    const int64_t row_blocks = static_cast<int64_t>(a.o.n_head) * a.o.head_dim / 32;
    const int64_t b = static_cast<int64_t>(t) * row_blocks + (static_cast<int64_t>(h) * a.o.head_dim + tid) / 32;
    group_store_q8_1(v, tid % 32, a.q8 + b * kQ8Bytes);
  }
}
#endif  // !STRATA_GPU_HIP

// ---- the portable path: the same definition, scalar float operations --------------------------------------------

// A block per (token, head): kChunk threads, one key each for the scores, one value index each for O (value
// indices tid + kChunk s, s < kSlots: value heads of up to kChunk * kSlots values). Key heads of head_dim values,
// value heads of value_dim (deepseek2: 576 and 512), head h's output at h * value_dim of its token's row.
template <Cache kCache, int kSlots>
__global__ void __launch_bounds__(kChunk) attention_flash_rows(Args a) {
  extern __shared__ float rows_smem[];
  float* q = rows_smem;                 // [head_dim]
  float* p = q + a.o.head_dim;          // [kChunk]
  __shared__ float red[kChunk];
  const Operands& o = a.o;
  const int h = static_cast<int>(blockIdx.x), t = static_cast<int>(blockIdx.y), tid = static_cast<int>(threadIdx.x);
  const int D = o.head_dim, Dv = o.value_dim;
  wait_for_inputs();
  start_dependents();
  const int32_t pos = o.pos[t];
  float* out = reinterpret_cast<float*>(o.dst + static_cast<uint64_t>(t) * o.d_stride) + static_cast<int64_t>(h) * Dv;
  if (pos < 0 || pos >= o.n_ctx) {
    for (int d = tid; d < Dv; d += kChunk) out[d] = __int_as_float(0x7fc00000);
    return;
  }
  for (int d = tid; d < D; d += kChunk) q[d] = q_row(o, t, h)[d];
  const int64_t koff = static_cast<int64_t>(h / o.group) * D;
  const int64_t voff = static_cast<int64_t>(h / o.group) * Dv;
  const int lo = window_first_key(pos, a.window);
  float M = -INFINITY, L = 0.0f;
  float O[kSlots], o_seg[kSlots];  // value indices tid, tid + 64, ...
#pragma unroll
  for (int k = 0; k < kSlots; ++k) O[k] = 0.0f, o_seg[k] = 0.0f;
  float m_seg = -INFINITY, l_seg = 0.0f;
  const int chunks_per_seg = a.seg_keys / kChunk;
  auto close_segment = [&]() {
    const float m_new = fmaxf(M, m_seg);
    const Fold f = fold_weights(M, m_seg, m_new);
    L = fold_value(f, L, l_seg);
#pragma unroll
    for (int k = 0; k < kSlots; ++k) O[k] = fold_value(f, O[k], o_seg[k]);
    M = f.kind == 0 ? M : m_new;
    m_seg = -INFINITY, l_seg = 0.0f;
#pragma unroll
    for (int k = 0; k < kSlots; ++k) o_seg[k] = 0.0f;
  };
  const int c_first = lo / kChunk, c_last = pos / kChunk;
  for (int c = c_first; c <= c_last; ++c) {
    if (c > c_first && c % chunks_per_seg == 0) close_segment();
    const int j = c * kChunk + tid;
    __syncthreads();
    float s = -INFINITY;
    if (j >= lo && j <= pos) {
      const char* col = o.k + static_cast<uint64_t>(j) * o.k_stride;
      float acc = 0.0f;
      for (int d = 0; d < D; ++d) acc = __fmaf_rn(q[d], cache_value<kCache>(col, koff + d), acc);
      s = mul_rn(acc, a.scale_log2);
    }
    red[tid] = s;
    __syncthreads();
    float mx = -INFINITY;
    for (int k = 0; k < kChunk; ++k) mx = fmaxf(mx, red[k]);
    const float m_new = fmaxf(m_seg, mx);
    const float sub = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = ex2(sub_rn(m_seg, sub));
    p[tid] = ex2(sub_rn(s, sub));
    __syncthreads();
    float sum = 0.0f;
    for (int k = 0; k < kChunk; ++k) sum = add_rn(sum, p[k]);
    l_seg = add_rn(mul_rn(l_seg, alpha), sum);
    m_seg = m_new;
#pragma unroll
    for (int k = 0; k < kSlots; ++k) {
      const int d = tid + kChunk * k;
      if (d >= Dv) continue;
      float acc = mul_rn(o_seg[k], alpha);
      for (int jj = 0; jj < kChunk; ++jj) {
        const int jk = c * kChunk + jj;
        if (jk < lo || jk > pos) continue;
        acc = __fmaf_rn(p[jj], cache_value<kCache>(o.v + static_cast<uint64_t>(jk) * o.v_stride, voff + d), acc);
      }
      o_seg[k] = acc;
    }
  }
  close_segment();
  Fold fs{1.0f, 0.0f, 2};
  if (a.sinks != nullptr) {
    const float m_sink = mul_rn(a.sinks[h], kLog2e);
    fs = fold_weights(M, m_sink, fmaxf(M, m_sink));
    L = fold_value(fs, L, 1.0f);
  }
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    const int d = tid + kChunk * k;
    if (d < Dv) out[d] = div_c(a.sinks != nullptr ? sink_scaled(fs, O[k]) : O[k], L);
  }
}

// ---- launches ----------------------------------------------------------------------------------------------------

Args make_args(const Operands& o) {
  Args a{};
  a.o = o;
  a.seg_keys = segment_keys(o.n_ctx);
  a.n_seg = static_cast<int>((o.n_ctx + a.seg_keys - 1) / a.seg_keys);
  a.row_tiles = static_cast<int>((static_cast<int64_t>(o.n_tok) * o.group + 15) / 16);
  a.window = o.window;
  a.sinks = o.sinks;
  a.scale_log2 = static_cast<float>(o.scale) * kLog2e;
  // 16-byte loads: the values' offsets (kv head * head_dim + 8 k halves) and the columns 16-byte aligned.
  const auto aligned16 = [](const void* p, uint64_t stride) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && stride % 16 == 0;
  };
  a.vec16 = o.vec4 != 0 && o.head_dim % 8 == 0 && aligned16(o.k, o.k_stride) && aligned16(o.v, o.v_stride) ? 1 : 0;
  return a;
}

// The piece size for q8_0 chunks staged raw (flash::stage_q8_raw): 8 or 4 bytes where a key's run of its head's
// blocks (head_dim / 32 blocks of 34 bytes), the column strides and the caches' starts are multiples of it; else 0.
int q8_unit_for(const Operands& o) {
  if (o.head_dim % 32 != 0) return 0;
  const uint64_t run = static_cast<uint64_t>(o.head_dim / 32) * kCacheQ8Bytes;
  for (const uint64_t u : {uint64_t{8}, uint64_t{4}}) {
    const auto aligned = [u](const void* p, uint64_t stride) { return reinterpret_cast<uintptr_t>(p) % u == 0 && stride % u == 0; };
    if (run % u == 0 && aligned(o.k, o.k_stride) && aligned(o.v, o.v_stride)) return static_cast<int>(u);
  }
  return 0;
}

#if !defined(STRATA_GPU_HIP)
// Shared memory of a tiles block and of a split block, with the raw q8_0 copies' room where q8_unit is set.
template <int kDp, int kBufs>
size_t tiles_bytes(bool raw) {
  return tiles_smem<kDp, kBufs>() + (raw ? kBufs * q8_raw_bytes<kDp>() : 0);
}
template <int kDp, int kBufs>
size_t split_bytes(bool raw) {
  return split_smem<kDp, kBufs>() + (raw ? kWarps * kBufs * q8_raw_bytes<kDp>() : 0);
}

// The opt-in a kernel asks for, once per device (allow_dynamic_smem): a q8_0 kernel's room with the raw copies where
// the device has it, whether or not this launch stages raw, so that a later launch that does is allowed it too.
template <Cache kCache>
size_t opt_in_bytes(const Context& ctx, size_t smem, size_t with_raw) {
  const bool room = with_raw <= static_cast<size_t>(ctx.props().sharedMemPerBlockOptin);
  return kCache == Cache::Q8_0 && room && with_raw > smem ? with_raw : smem;
}

template <Cache kCache, int kDp, int kBufs>
void launch_tiles(Context& ctx, const Args& a, int n_kv_head) {
  auto* const kernel = attention_flash_tiles<kCache, kDp, kBufs>;
  const size_t smem = tiles_bytes<kDp, kBufs>(a.q8_unit != 0);
  allow_dynamic_smem<attention_flash_tiles<kCache, kDp, kBufs>>(ctx, opt_in_bytes<kCache>(ctx, smem, tiles_bytes<kDp, kBufs>(true)));
  const int64_t rows = static_cast<int64_t>(a.o.n_tok) * a.o.group;
  const dim3 grid(static_cast<unsigned>((rows + 16 * kWarps - 1) / (16 * kWarps)), static_cast<unsigned>(n_kv_head));
  launch_dependent(ctx, kernel, grid, kFlashThreads, smem, a);
  check_launch("ATTENTION (flash tiles)");
}

template <Cache kCache, int kDp, int kBufs>
void launch_split(Context& ctx, const Args& a, int n_kv_head) {
  auto* const kernel = attention_flash_split<kCache, kDp, kBufs>;
  const size_t smem = split_bytes<kDp, kBufs>(a.q8_unit != 0);
  allow_dynamic_smem<attention_flash_split<kCache, kDp, kBufs>>(ctx, opt_in_bytes<kCache>(ctx, smem, split_bytes<kDp, kBufs>(true)));
  // Enough blocks for about four per multiprocessor at the capacity's depth; warps stride over the segments.
  const int64_t y = static_cast<int64_t>(n_kv_head) * a.row_tiles;
  const int64_t seg_blocks = (a.n_seg + kWarps - 1) / kWarps;
  const int64_t want = (4 * ctx.props().multiProcessorCount + y - 1) / y;
  const int64_t x = std::max<int64_t>(1, std::min(seg_blocks, want));
  launch_dependent(ctx, kernel, dim3(static_cast<unsigned>(x), static_cast<unsigned>(y)), kFlashThreads, smem, a);
  check_launch("ATTENTION (flash split)");
  // The combine with two O buffers where a block gets their room (sm_80 and sm_90), else one: the same bits.
  const dim3 combine_grid(static_cast<unsigned>(a.o.n_head), static_cast<unsigned>(a.o.n_tok));
  if (combine_smem<kDp, true>() <= static_cast<size_t>(ctx.props().sharedMemPerBlockOptin)) {
    allow_dynamic_smem<attention_flash_combine<kDp, true>>(ctx, combine_smem<kDp, true>());
    launch_dependent(ctx, attention_flash_combine<kDp, true>, combine_grid, kFlashThreads, combine_smem<kDp, true>(), a);
  } else {
    allow_dynamic_smem<attention_flash_combine<kDp, false>>(ctx, combine_smem<kDp, false>());
    launch_dependent(ctx, attention_flash_combine<kDp, false>, combine_grid, kFlashThreads, combine_smem<kDp, false>(), a);
  }
  check_launch("ATTENTION (flash combine)");
}

template <Cache kCache, int kDp>
void launch_tc(Context& ctx, Args a, int n_kv_head, bool split) {
  if (split) {
    const uint64_t bytes = static_cast<uint64_t>(a.o.n_tok) * a.o.n_head * a.n_seg * record_floats(kDp) * sizeof(float);
    a.part = static_cast<float*>(ctx.scratch(ScratchSlot::AttnPartial, bytes));
    // Chunk buffers a warp: three for f16 chunks copied asynchronously where a block of them fits (sm_90 at
    // every head size), two where that fits (sm_80 too; sm_86, 89 and 120 below 128), else one: the same bits,
    // more or fewer loads in flight. q8_0 chunks staged raw first (their room for the raw copies), then two.
    const auto fits = [&](size_t smem) { return smem <= static_cast<size_t>(ctx.props().sharedMemPerBlockOptin); };
    const bool raw = a.q8_unit != 0;
    if (raw && !fits(split_bytes<kDp, 2>(true)) && !fits(split_bytes<kDp, 1>(true))) a.q8_unit = 0;
    if constexpr (kCache == Cache::F16) {
      if (a.vec16 != 0 && fits(split_bytes<kDp, 3>(false))) {
        launch_split<kCache, kDp, 3>(ctx, a, n_kv_head);
        return;
      }
    }
    if (fits(split_bytes<kDp, 2>(a.q8_unit != 0))) {
      launch_split<kCache, kDp, 2>(ctx, a, n_kv_head);
    } else {
      launch_split<kCache, kDp, 1>(ctx, a, n_kv_head);
    }
  } else {
    a.q8 = nullptr;
    // Two chunk buffers where two blocks of them still fit a multiprocessor (sm_90 at every head size), else one;
    // q8_0 chunks staged raw where two blocks fit with the raw copies' room, else where one does.
    const auto two_fit = [&](size_t smem) {
      return 2 * smem <= static_cast<size_t>(ctx.props().sharedMemPerMultiprocessor) - 2048;
    };
    const auto one_fits = [&](size_t smem) { return smem <= static_cast<size_t>(ctx.props().sharedMemPerBlockOptin); };
    if (a.q8_unit != 0 && !two_fit(tiles_bytes<kDp, 2>(true)) && !one_fits(tiles_bytes<kDp, 1>(true))) {
      a.q8_unit = 0;
    }
    if (two_fit(tiles_bytes<kDp, 2>(a.q8_unit != 0))) {
      launch_tiles<kCache, kDp, 2>(ctx, a, n_kv_head);
    } else {
      launch_tiles<kCache, kDp, 1>(ctx, a, n_kv_head);
    }
  }
}

template <Cache kCache>
void launch_tc_for(Context& ctx, const Args& a, int n_kv_head, bool split) {
  if (a.o.head_dim <= 32) {
    launch_tc<kCache, 32>(ctx, a, n_kv_head, split);
  } else if (a.o.head_dim <= 64) {
    launch_tc<kCache, 64>(ctx, a, n_kv_head, split);
  } else {
    launch_tc<kCache, 128>(ctx, a, n_kv_head, split);
  }
}
#endif

template <Cache kCache>
void launch_rows(Context& ctx, const Args& a) {
  const size_t bytes = sizeof(float) * static_cast<size_t>(a.o.head_dim + kChunk);
  static_assert(kRowsMaxValueDim == kChunk * kRowsMaxSlots && sizeof(float) * (kRowsMaxKeyDim + kChunk) <= 48 * 1024,
                "the rows kernel's value slots and shared q");
  auto* kernel = a.o.value_dim <= kChunk * 4 ? attention_flash_rows<kCache, 4> : attention_flash_rows<kCache, kRowsMaxSlots>;
  launch_dependent(ctx, kernel, dim3(static_cast<unsigned>(a.o.n_head), static_cast<unsigned>(a.o.n_tok)), kChunk, bytes, a);
  check_launch("ATTENTION (portable rows)");
}

}  // namespace

bool flash_tensor_cores(const Context& ctx, const Operands& o, Cache cache) {
#if defined(STRATA_GPU_HIP)
  (void)ctx;
  (void)o;
  (void)cache;
  return false;
#else
  // The tiles, split and combine kernels share one head size for keys and values (kDp): value heads of their own
  // size (deepseek2) take the rows kernel.
  return o.head_dim <= 128 && o.value_dim == o.head_dim && cache != Cache::F32 && ctx.props().major >= 8;
#endif
}

bool flash_split(const Operands& o) { return o.n_tok <= kMaxFlashSplitTokens; }

void run_flash(Context& ctx, const Operands& o, Cache cache, int n_kv_head, unsigned char* q8) {
  Args a = make_args(o);
  a.q8 = q8;
  a.q8_unit = cache == Cache::Q8_0 ? q8_unit_for(o) : 0;
#if !defined(STRATA_GPU_HIP)
  if (flash_tensor_cores(ctx, o, cache)) {
    const bool split = flash_split(o);
    if (cache == Cache::F16) {
      launch_tc_for<Cache::F16>(ctx, a, n_kv_head, split);
    } else {
      launch_tc_for<Cache::Q8_0>(ctx, a, n_kv_head, split);
    }
    return;
  }
#endif
  (void)n_kv_head;
  switch (cache) {
    case Cache::F16: launch_rows<Cache::F16>(ctx, a); break;
    case Cache::Q8_0: launch_rows<Cache::Q8_0>(ctx, a); break;
    case Cache::F32: launch_rows<Cache::F32>(ctx, a); break;
  }
}

}  // namespace strata::gpu::attention
