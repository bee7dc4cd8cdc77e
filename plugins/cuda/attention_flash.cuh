// ATTENTION in float on tensor cores (the default; docs/CANONICAL_ARITHMETIC.md section 7), flash-attention
// style: no score matrix in memory, an online softmax over fixed chunks of keys.
//
// One definition of a row's output, whatever computes it. Keys are cut at absolute positions into chunks of
// kChunk (64) and the chunks into segments of seg_keys (a function of the cache's capacity alone). A row's state
// over one segment runs the chunks in ascending order, each chunk one warp's MMA tile of 16 rows: scores
// S = Q K^T (m16n8k16, f16 operands, f32 accumulation, the k-steps over the head in ascending order), masked
// scores to -inf, m' = max(m, row max), P = 2^(S*scale*log2e - m'), l = l * 2^(m - m') + sum P (a fixed order),
// O = P V + O * 2^(m - m') (P in f16, the k-steps over the chunk's keys in ascending order). The segments' states
// are then folded in ascending order: the first non-empty one is taken as it is, each next one by
// M' = max(M, m), L = L * 2^(M - M') + l * 2^(m - M'), O = O * 2^(M - M') + O_seg * 2^(m - M'); out = O / L.
// Rows are independent in an MMA, and nothing here depends on how many rows or tokens a launch holds, so a
// position's output has the same bits in a prompt chunk, in a window of a few tokens and in a one-token step.
//
// Two kernels run that definition: tiles (prefill: 64 query rows a block, walking every chunk its rows see and
// folding each segment into its running total as it ends) and split (a few tokens: a warp per segment, the
// states to scratch) with its combine (a block per row folds the segments; the running maxima by a prefix-max
// scan, exact in any order, so only the cheap sums are a chain). gpt-oss's ATTENTION (backend 1.6, set from the op
// by op_attention.cu): `window` (sliding windows: keys below p - window + 1 masked, their chunks and segments
// skipped) and `sinks` (a logit per q head folded in last as a segment with l = 1, O = 0); K and V head sizes share
// one template parameter today.
//
// The kernels' bodies are __host__ __device__: on the device the warp's collectives (ldmatrix, mma.sync, shuffles,
// barriers) are the instructions; on the host they call an emulator (tests/cuda_host/attention_flash_test.cu runs
// whole blocks there, one host thread per GPU thread). The tensor-core path needs sm_80 or later; HIP and head
// sizes above 128 take the portable kernel in attention_flash.cu (scalar float operations in place of the MMAs).
#pragma once

#include <cstdint>
#include <cstring>

#include "async_copy.cuh"
#include "attention_common.cuh"
#include "canonical_math.cuh"

#if defined(STRATA_GPU_HIP)
#include <hip/hip_fp16.h>
#else
#include <cuda_fp16.h>
#endif

namespace strata::gpu::attention::flash {

constexpr int kChunk = 64;  // keys per chunk: one warp's tile of scores
constexpr int kWarps = 4;   // warps per block, both kernels
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxSegments = 512;  // segments per capacity (the split path's scratch per row)
constexpr float kLog2e = 1.44269504088896340736f;

struct Args {
  Operands o;
  int seg_keys;        // keys per segment, a multiple of kChunk
  int n_seg;           // segments the cache's capacity holds
  int row_tiles;       // 16-row tiles per kv head (split path)
  int window;          // 0: every key up to the position; W: keys p - W + 1 .. p (make_args: the op's, o.window)
  const float* sinks;  // nullptr, or one logit per q head (make_args: o.sinks)
  float scale_log2;    // scale * log2(e), rounded once on the host
  float* part;         // split path: per (token, head, segment) a record of m, l, 2 unused, O[kDp]
  unsigned char* q8;   // split path: nullptr, or the output rows' Q8_1 copy
  int vec16;           // f16 caches whose columns allow 16-byte loads of 8 values (alignment checked on the host)
  int q8_unit;         // q8_0 caches: 8 or 4, a chunk's raw blocks copied asynchronously in pieces of that many bytes
                       // and converted in shared memory (stage_q8_raw, q8_convert); 0, loaded and converted per piece
};

// Keys per segment: 128, doubled until the capacity holds at most kMaxSegments of them.
inline int segment_keys(int64_t n_ctx) {
  int64_t s = 128;
  while (s * kMaxSegments < n_ctx) s *= 2;
  return static_cast<int>(s);
}

__host__ __device__ constexpr int record_floats(int dp) { return dp + 4; }
template <int kDp>
__host__ __device__ constexpr int smem_stride() {
  return kDp + 8;  // halves: rows 16 bytes out of step, so ldmatrix's eight row reads hit distinct banks
}

// Where a thread is: its index in the block and the block's in the grid.
struct Place {
  int tid;
  int bx, by, gx;
};

// ---- the collectives: instructions on the device, the emulator's on the host ----------------------------------

// The host emulation of a warp (tests/cuda_host): one object per emulated thread, current for that host thread.
struct HostWarp {
  virtual ~HostWarp() = default;
  virtual void sync_warp() = 0;
  virtual void sync_block() = 0;
  virtual float shfl_xor(float v, int mask) = 0;
  virtual int shfl_xor_int(int v, int mask) = 0;
  virtual float shfl_up(float v, int delta) = 0;
  virtual void ldsm_x4(uint32_t (&r)[4], const void* p, bool trans) = 0;
  virtual void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) = 0;
  virtual float ex2(float x) = 0;
};
inline thread_local HostWarp* host_warp = nullptr;

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define STRATA_FLASH_DEVICE 0
#elif defined(__HIP_DEVICE_COMPILE__)
#define STRATA_FLASH_DEVICE 2  // AMD: no ldmatrix or mma.sync (the portable kernel runs); 64-lane shuffles
#else
#define STRATA_FLASH_DEVICE 1
#endif

__host__ __device__ __forceinline__ void sync_warp() {
#if STRATA_FLASH_DEVICE == 2
  __syncthreads();  // never reached: the tensor-core kernels are not built for AMD
#elif STRATA_FLASH_DEVICE
  __syncwarp();
#else
  host_warp->sync_warp();
#endif
}
__host__ __device__ __forceinline__ void sync_block() {
#if STRATA_FLASH_DEVICE
  __syncthreads();
#else
  host_warp->sync_block();
#endif
}
__host__ __device__ __forceinline__ float shfl_xor_f(float v, int mask) {
#if STRATA_FLASH_DEVICE == 2
  return __shfl_xor(v, mask, 32);
#elif STRATA_FLASH_DEVICE
  return __shfl_xor_sync(0xffffffffu, v, mask);
#else
  return host_warp->shfl_xor(v, mask);
#endif
}
__host__ __device__ __forceinline__ int shfl_xor_i(int v, int mask) {
#if STRATA_FLASH_DEVICE == 2
  return __shfl_xor(v, mask, 32);
#elif STRATA_FLASH_DEVICE
  return __shfl_xor_sync(0xffffffffu, v, mask);
#else
  return host_warp->shfl_xor_int(v, mask);
#endif
}
__host__ __device__ __forceinline__ float shfl_up_f(float v, int delta) {
#if STRATA_FLASH_DEVICE == 2
  return __shfl_up(v, delta, 32);
#elif STRATA_FLASH_DEVICE
  return __shfl_up_sync(0xffffffffu, v, delta);
#else
  return host_warp->shfl_up(v, delta);
#endif
}
// 2^x: the hardware's approximation on the device (MUFU; deterministic), the emulator's stand-in on the host.
__host__ __device__ __forceinline__ float ex2(float x) {
#if STRATA_FLASH_DEVICE == 2
  return exp2f(x);
#elif STRATA_FLASH_DEVICE
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return host_warp->ex2(x);
#endif
}
// Four 8x8 matrices of halves, each row's address given by a lane (lanes 8i..8i+7: matrix i); a lane gets row
// lane / 4, columns 2 (lane % 4) and + 1 of each (trans: rows 2 (lane % 4) and + 1, column lane / 4).
__host__ __device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const __half* p) {
#if STRATA_FLASH_DEVICE == 2
  (void)r;
  (void)p;
  __builtin_trap();
#elif STRATA_FLASH_DEVICE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))));
#else
  host_warp->ldsm_x4(r, p, false);
#endif
}
__host__ __device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const __half* p) {
#if STRATA_FLASH_DEVICE == 2
  (void)r;
  (void)p;
  __builtin_trap();
#elif STRATA_FLASH_DEVICE
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(p))));
#else
  host_warp->ldsm_x4(r, p, true);
#endif
}
// d += a b: one m16n8k16 MMA, f16 operands, f32 accumulation (PTX's fragment layouts).
__host__ __device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if STRATA_FLASH_DEVICE == 2
  (void)d;
  (void)a;
  (void)b0;
  (void)b1;
  __builtin_trap();
#elif STRATA_FLASH_DEVICE
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  host_warp->mma(d, a, b0, b1);
#endif
}

// IEEE operations, each rounded once (the plugin builds with --fmad=false; the host test with -ffp-contract=off);
// division is canonical_math.cuh's div_c.
__host__ __device__ __forceinline__ float add_rn(float a, float b) {
#if STRATA_FLASH_DEVICE
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
__host__ __device__ __forceinline__ float sub_rn(float a, float b) {
#if STRATA_FLASH_DEVICE
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
__host__ __device__ __forceinline__ float mul_rn(float a, float b) {
#if STRATA_FLASH_DEVICE
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
__host__ __device__ __forceinline__ float quiet_nan() {
  const uint32_t u = 0x7fc00000u;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
__host__ __device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }
__host__ __device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

// 16- and 8-byte moves at addresses aligned to their size: one vector load or store on the device.
__host__ __device__ __forceinline__ void copy16(void* dst, const void* src) {
#if STRATA_FLASH_DEVICE
  *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
#else
  memcpy(dst, src, 16);
#endif
}
__host__ __device__ __forceinline__ void copy8(void* dst, const void* src) {
#if STRATA_FLASH_DEVICE
  *static_cast<uint2*>(dst) = *static_cast<const uint2*>(src);
#else
  memcpy(dst, src, 8);
#endif
}

// ---- the definition's pieces ---------------------------------------------------------------------------------------

// A segment's state folded into the total: the weights of the old total (a) and of the segment (b), and what
// happens: 0, the segment is empty (nothing changes); 1, the first non-empty one (taken as it is); 2, a fold.
struct Fold {
  float a, b;
  int kind;
};
__host__ __device__ __forceinline__ Fold fold_weights(float m_total, float m_seg, float m_new) {
  if (m_seg == -INFINITY) return {0.0f, 0.0f, 0};
  if (m_total == -INFINITY) return {0.0f, 1.0f, 1};
  return {ex2(sub_rn(m_total, m_new)), ex2(sub_rn(m_seg, m_new)), 2};
}
// Without a branch: the fold's products and sum are always formed, then the kind selects (a branch per fold kept
// the combine's chain from reading the next folds' operands ahead).
__host__ __device__ __forceinline__ float fold_value(const Fold& f, float total, float seg) {
  const float folded = add_rn(mul_rn(total, f.a), mul_rn(seg, f.b));
  const float kept = f.kind == 1 ? seg : total;
  return f.kind == 2 ? folded : kept;
}

// O after the sink's fold (its O is 0): scaled by the total's weight, or 0 where the sink is the first term.
__host__ __device__ __forceinline__ float sink_scaled(const Fold& f, float o) { return f.kind == 2 ? mul_rn(o, f.a) : 0.0f; }

// The row's position, or -1 for a row that sees nothing (no such row, or a position outside the cache).
__host__ __device__ __forceinline__ int row_position(const Operands& o, int64_t row) {
  if (row >= static_cast<int64_t>(o.n_tok) * o.group) return -1;
  const int p = o.pos[row / o.group];
  return p >= 0 && p < o.n_ctx ? p : -1;
}
__host__ __device__ __forceinline__ float* out_row(const Operands& o, int t, int h) {
  return reinterpret_cast<float*>(o.dst + static_cast<uint64_t>(t) * o.d_stride) + static_cast<int64_t>(h) * o.head_dim;
}

// Cache columns j0 .. j0 + kChunk - 1 of one kv head as f16 rows of smem_stride halves: columns outside [begin, end)
// (below the block's sliding windows, at or past its last position) and values past head_dim as zeros (stale or
// unwritten columns never reach an MMA: 0 * NaN would, though such a column's P is 0). f16 caches with vec16:
// 16-byte pieces of 8 values copied asynchronously, every piece of the thread in flight at once (decode is a
// memory-bound walk over the cache), waited for before returning; otherwise threads tid, tid + n_thr, ... each load
// kBatch pieces of 4 values (`vec`: one load where the columns allow it) before converting and storing any.
// `wait` false: the asynchronous copies are committed as a group and not waited for (stage_wait_until).
template <Cache kCache, int kDp>
__host__ __device__ __forceinline__ void stage_chunk(const char* base, uint64_t col_stride, int64_t koff, int D, int j0,
                                                     int begin, int end, bool vec, bool vec16, __half* out, int tid, int n_thr,
                                                     bool wait = true) {
  constexpr int kS = smem_stride<kDp>();
  constexpr int kBatch = 8;
  if (kCache == Cache::F16 && vec16) {
    constexpr int kOcts = kDp / 8, kItems = kChunk * kOcts;
    if (n_thr % kOcts == 0) {
      // Every launch: a thread keeps one value offset d and walks the keys n_thr / kOcts apart, its source and
      // destination advanced by adds (the copies are issued back to back).
      const int d = (tid % kOcts) * 8, jstep = n_thr / kOcts;
      int jj = tid / kOcts;
      const char* src = base + static_cast<uint64_t>(j0 + jj) * col_stride + 2 * (koff + d);
      const uint64_t src_step = static_cast<uint64_t>(jstep) * col_stride;
      __half* dst = out + jj * kS + d;
      for (; jj < kChunk; jj += jstep, src += src_step, dst += jstep * kS) {
        const bool valid = d < D && j0 + jj >= begin && j0 + jj < end;
        copy16_async(dst, valid ? src : base, valid);
      }
    } else {
      for (int i = tid; i < kItems; i += n_thr) {
        const int jj = i / kOcts, d = (i % kOcts) * 8;
        const bool valid = j0 + jj >= begin && j0 + jj < end && d < D;
        const char* src = valid ? base + static_cast<uint64_t>(j0 + jj) * col_stride + 2 * (koff + d) : base;
        copy16_async(out + jj * kS + d, src, valid);
      }
    }
    stage_end(wait);
    return;
  }
  constexpr int kQuads = kDp / 4, kItems = kChunk * kQuads;
  for (int first = tid; first < kItems; first += kBatch * n_thr) {
    alignas(8) uint32_t w[kBatch][2];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = first + u * n_thr, jj = i / kQuads, d = (i % kQuads) * 4;
      const int j = j0 + jj;
      w[u][0] = w[u][1] = 0u;
      if (i < kItems && j >= begin && j < end && d < D) {
        const char* col = base + static_cast<uint64_t>(j) * col_stride;
        if (kCache == Cache::F16 && vec && d + 4 <= D) {
          copy8(w[u], col + 2 * (koff + d));
        } else {
          float x[4];
          if (vec && d + 4 <= D) {
            cache_values4<kCache>(col, koff + d, x);
          } else {
            for (int k = 0; k < 4; ++k) x[k] = d + k < D ? cache_value<kCache>(col, koff + d + k) : 0.0f;
          }
          w[u][0] = pack_half2(x[0], x[1]);
          w[u][1] = pack_half2(x[2], x[3]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = first + u * n_thr;
      if (i < kItems) copy8(out + (i / kQuads) * kS + (i % kQuads) * 4, w[u]);
    }
  }
}

// ---- q8_0 chunks, raw: copied asynchronously, then converted in shared memory ------------------------------------
//
// stage_chunk's q8_0 path loads a chunk as pieces of four values (a scale and four bytes each) and converts each as
// it lands, a few pieces in flight a thread: a chunk is several dependent round trips, which at long depths is the
// whole cost. Here a key's run of its kv head's blocks (D / 32 blocks of 34 bytes) is copied raw by cp.async in
// pieces of 8 or 4 bytes (as the run's length and the columns' alignment allow), every piece in flight, and then
// q8_convert makes the chunk's f16 rows with cache_values4's arithmetic from the copy: the same bits.

// Bytes of a key's run at head size kDp, and of a chunk's raw copy.
template <int kDp>
__host__ __device__ constexpr int q8_run_max() {
  return kDp / 32 * kCacheQ8Bytes;
}
template <int kDp>
__host__ __device__ constexpr size_t q8_raw_bytes() {
  return static_cast<size_t>(kChunk) * q8_run_max<kDp>();
}

template <int kUnit>
__host__ __device__ __forceinline__ void stage_q8_raw_pieces(const char* base, uint64_t col_stride, int64_t koff, int D,
                                                             int j0, int begin, int end, unsigned char* raw, int tid,
                                                             int n_thr) {
  const int run = D / 32 * kCacheQ8Bytes, pieces = run / kUnit;
  const uint64_t head = static_cast<uint64_t>(koff / 32) * kCacheQ8Bytes;
  for (int i = tid; i < kChunk * pieces; i += n_thr) {
    const int jj = i / pieces, u = i % pieces;
    const bool valid = j0 + jj >= begin && j0 + jj < end;
    const char* src = valid ? base + static_cast<uint64_t>(j0 + jj) * col_stride + head + static_cast<uint64_t>(u) * kUnit
                            : base;
    copy_small_async<kUnit>(raw + jj * run + u * kUnit, src, valid);
  }
}

// Columns j0 .. j0 + kChunk - 1 of one kv head (values koff .. koff + D - 1 of each, D a multiple of 32) copied raw
// to `raw` (key jj's run at jj * run): keys outside [begin, end) zero-filled. `wait` as stage_chunk's.
__host__ __device__ __forceinline__ void stage_q8_raw(const char* base, uint64_t col_stride, int64_t koff, int D, int j0,
                                                      int begin, int end, unsigned char* raw, int unit, int tid, int n_thr,
                                                      bool wait) {
  if (unit == 8) {
    stage_q8_raw_pieces<8>(base, col_stride, koff, D, j0, begin, end, raw, tid, n_thr);
  } else {
    stage_q8_raw_pieces<4>(base, col_stride, koff, D, j0, begin, end, raw, tid, n_thr);
  }
  stage_end(wait);
}

// The chunk's f16 rows (smem_stride apart) from its raw copy: values past D as zeros, a zero-filled key's as zeros
// (its scale is 0), every other value cache_values4's, as stage_chunk makes them from the columns.
template <int kDp>
__host__ __device__ __forceinline__ void q8_convert(const unsigned char* raw, int D, __half* out, int tid, int n_thr) {
  constexpr int kS = smem_stride<kDp>(), kQuads = kDp / 4;
  const int run = D / 32 * kCacheQ8Bytes;
  for (int i = tid; i < kChunk * kQuads; i += n_thr) {
    const int jj = i / kQuads, d = (i % kQuads) * 4;
    alignas(8) uint32_t w[2] = {0u, 0u};
    if (d < D) {
      float x[4];
      cache_values4<Cache::Q8_0>(reinterpret_cast<const char*>(raw + jj * run), d, x);
      w[0] = pack_half2(x[0], x[1]);
      w[1] = pack_half2(x[2], x[3]);
    }
    copy8(out + jj * kS + d, w);
  }
}

// `n_rows` q rows of a kv head from row0 (rows are (token, q head of the group)) as f16, zeros past the rows and
// past head_dim: value i = r kDp + d of the tile. A thread's values are i = first + u n_thr, u < kPer: load_q
// issues all of their loads before any is used (one round trip to global memory, not one a value), store_q
// converts and stores them.
template <int kDp, int kPer>
__host__ __device__ __forceinline__ void load_q(const Operands& o, int kvh, int64_t row0, int first, int n_thr, int n_rows,
                                                float (&x)[kPer]) {
  const int64_t all_rows = static_cast<int64_t>(o.n_tok) * o.group;
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int i = first + u * n_thr, r = i / kDp, d = i % kDp;
    const int64_t row = row0 + r;
    x[u] = i < n_rows * kDp && row < all_rows && d < o.head_dim
               ? q_row(o, static_cast<int>(row / o.group), kvh * o.group + static_cast<int>(row % o.group))[d]
               : 0.0f;
  }
}
template <int kDp, int kPer>
__host__ __device__ __forceinline__ void store_q(const float (&x)[kPer], __half* qs, int first, int n_thr, int n_rows) {
  constexpr int kS = smem_stride<kDp>();
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const int i = first + u * n_thr;
    if (i < n_rows * kDp) qs[(i / kDp) * kS + i % kDp] = __float2half_rn(x[u]);
  }
}
template <int kDp>
__host__ __device__ __forceinline__ void stage_q(const Operands& o, int kvh, int64_t row0, __half* qs, int tid,
                                                 int n_thr, int n_rows) {
  constexpr int kBatch = 16;
  for (int first = tid; first < n_rows * kDp; first += kBatch * n_thr) {
    float x[kBatch];
    load_q<kDp, kBatch>(o, kvh, row0, first, n_thr, n_rows, x);
    store_q<kDp, kBatch>(x, qs, first, n_thr, n_rows);
  }
}

// A warp's 16 rows over one segment: per thread its two rows (g = lane / 4 and g + 8): m and l (the same in the
// four lanes of a quad) and its C fragments of O.
template <int kDp>
struct SegState {
  float m[2], l[2];
  float o[kDp / 8][4];
  __host__ __device__ __forceinline__ void reset() {
    #pragma unroll
    for (int i = 0; i < 2; ++i) m[i] = -INFINITY, l[i] = 0.0f;
    #pragma unroll
    for (int dt = 0; dt < kDp / 8; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  }
};

// The q fragments of the warp's 16 rows (every k-step of the head).
template <int kDp>
__host__ __device__ __forceinline__ void load_q_frags(const __half* qs, int lane, uint32_t (&qf)[kDp / 16][4]) {
  constexpr int kS = smem_stride<kDp>();
#pragma unroll
  for (int kk = 0; kk < kDp / 16; ++kk) ldsm_x4(qf[kk], qs + (lane % 16) * kS + kk * 16 + (lane / 16) * 8);
}

// Scores of the warp's 16 rows against the chunk's keys (ks), in log2 units, masked to -inf outside [lo, hi] of
// each row: s[nt][i] is row g + 8 (i / 2), key j0 + 8 nt + 2 (lane % 4) + i % 2.
template <int kDp>
__host__ __device__ __forceinline__ void chunk_scores(const uint32_t (&qf)[kDp / 16][4], const __half* ks, int lane,
                                                      int j0, const int (&lo)[2], const int (&hi)[2], float scale_log2,
                                                      float (&s)[kChunk / 8][4]) {
  constexpr int kS = smem_stride<kDp>();
#pragma unroll
  for (int nt = 0; nt < kChunk / 8; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kDp / 16; kk += 2) {
      uint32_t b[4];
      ldsm_x4(b, ks + (nt * 8 + lane % 8) * kS + kk * 16 + (lane / 8) * 8);
      mma_16816(s[nt], qf[kk], b[0], b[1]);
      mma_16816(s[nt], qf[kk + 1], b[2], b[3]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int j = j0 + nt * 8 + 2 * (lane % 4) + (i & 1), r = i / 2;
      s[nt][i] = j >= lo[r] && j <= hi[r] ? mul_rn(s[nt][i], scale_log2) : -INFINITY;
    }
  }
}

// The online-softmax step of the chunk's scores into the segment's state, then O += P V with its values (vs).
template <int kDp>
__host__ __device__ __forceinline__ void chunk_accumulate(float (&s)[kChunk / 8][4], const __half* vs, int lane,
                                                          SegState<kDp>& st) {
  constexpr int kS = smem_stride<kDp>();
  float alpha[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
    mx = fmaxf(mx, shfl_xor_f(mx, 1));
    mx = fmaxf(mx, shfl_xor_f(mx, 2));
    const float m_new = fmaxf(st.m[r], mx);
    const float sub = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet: every P is 2^-inf = 0
    alpha[r] = ex2(sub_rn(st.m[r], sub));
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kChunk / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = ex2(sub_rn(s[nt][2 * r + e], sub));
        s[nt][2 * r + e] = p;
        sum = add_rn(sum, p);
      }
    }
    sum = add_rn(sum, shfl_xor_f(sum, 1));  // commutative: the four lanes of a quad agree
    sum = add_rn(sum, shfl_xor_f(sum, 2));
    st.l[r] = add_rn(mul_rn(st.l[r], alpha[r]), sum);
    st.m[r] = m_new;
  }
#pragma unroll
  for (int dt = 0; dt < kDp / 8; ++dt) {
    st.o[dt][0] = mul_rn(st.o[dt][0], alpha[0]);
    st.o[dt][1] = mul_rn(st.o[dt][1], alpha[0]);
    st.o[dt][2] = mul_rn(st.o[dt][2], alpha[1]);
    st.o[dt][3] = mul_rn(st.o[dt][3], alpha[1]);
  }
#pragma unroll
  for (int kk = 0; kk < kChunk / 16; ++kk) {
    const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                            pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int dp = 0; dp < kDp / 16; ++dp) {
      uint32_t b[4];
      ldsm_x4_trans(b, vs + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * kS + dp * 16 + (lane / 16) * 8);
      mma_16816(st.o[2 * dp], pa, b[0], b[1]);
      mma_16816(st.o[2 * dp + 1], pa, b[2], b[3]);
    }
  }
}

// Positions (lo, hi) of the thread's two rows; a row that sees nothing gets hi = -1, lo = 1.
__host__ __device__ __forceinline__ void row_bounds(const Args& a, int64_t row0, int lane, int (&lo)[2], int (&hi)[2]) {
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int p = row_position(a.o, row0 + lane / 4 + 8 * r);
    hi[r] = p;
    lo[r] = p < 0 ? 1 : window_first_key(p, a.window);
  }
}

// The smallest lo and largest hi over the warp's 16 rows (hi_w = -1: none sees a key).
__host__ __device__ __forceinline__ void warp_bounds(const int (&lo)[2], const int (&hi)[2], int& lo_w, int& hi_w) {
  int l = hi[0] >= 0 ? lo[0] : INT32_MAX, h = hi[0];
  if (hi[1] >= 0) l = imin(l, lo[1]);
  h = imax(h, hi[1]);
  for (int m = 4; m < 32; m *= 2) {
    l = imin(l, shfl_xor_i(l, m));
    h = imax(h, shfl_xor_i(h, m));
  }
  lo_w = l, hi_w = h;
}

// The chunk walk of both kernels over chunks c_first..c_last: stage the chunk's keys (stage(true, c, buf, wait)),
// its scores (scores(c, keys, s)), stage its values, then accumulate(s, values); at_chunk(c) first in each chunk
// (the tiles kernel closes a segment there); `sync` is the barrier of those who share the buffers (the block, or one
// warp). kBufs chunk buffers of buf_halves halves each, from `bufs`, taken in turn by the walk's items K(c_first),
// V(c_first), K(c_first + 1), ...: with two or three, that many items are issued at the start and each next one as
// an item's buffer is used up, so later chunks' loads fly during this one's MMAs (two: K(c + 1) during P V; three:
// K(c + 1) and V(c + 1) as well, for walks that are only a few chunks long, where each round trip is the cost);
// with one, one buffer takes the keys, then the values. The arithmetic is the same either way.
// `convert` (q8_0 chunks staged raw; `converting` block-uniform; at most two buffers): after a buffer's copies
// landed, convert(keys, buf) makes its f16 rows and a sync makes them everyone's before they are read; the next
// copies into the raw buffer are issued only after that.
template <int kBufs, class Stage, class Sync, class AtChunk, class Scores, class Accumulate, class Convert>
__host__ __device__ __forceinline__ void walk_chunks(int c_first, int c_last, __half* bufs, int buf_halves,
                                                     const Stage& stage, const Sync& sync, const AtChunk& at_chunk,
                                                     const Scores& scores, const Accumulate& accumulate,
                                                     bool converting, const Convert& convert) {
  static_assert(kBufs >= 1 && kBufs <= 3, "one, two or three chunk buffers");
  const auto landed = [&](bool keys, __half* buf) {
    sync();
    if (converting) {
      convert(keys, buf);
      sync();
    }
  };
  if constexpr (kBufs > 1) {
    // Item i: the keys (i even) or values of chunk c_first + i / 2, in buffer i % kBufs.
    const int n_items = 2 * (c_last - c_first + 1);
    const auto item_buf = [&](int i) { return bufs + (i % kBufs) * buf_halves; };
    const auto issue = [&](int i) { stage(i % 2 == 0, c_first + i / 2, item_buf(i), false); };
    for (int i = 0; i < kBufs && i < n_items; ++i) issue(i);
    float s[kChunk / 8][4];
    for (int i = 0; i < n_items; ++i) {
      const bool keys = i % 2 == 0;
      const int c = c_first + i / 2;
      if (keys) at_chunk(c);
      // Item i landed: only the items issued after it may still fly.
      const int ahead = imin(kBufs - 1, n_items - 1 - i);
      if (kBufs > 2 && ahead >= 2) {
        stage_wait_until<2>();
      } else if (ahead >= 1) {
        stage_wait_until<1>();
      } else {
        stage_wait_until<0>();
      }
      landed(keys, item_buf(i));
      if (keys) {
        scores(c, item_buf(i), s);
      } else {
        accumulate(s, item_buf(i));
      }
      sync();  // the buffer is used up
      if (i + kBufs < n_items) issue(i + kBufs);
    }
  } else {
    for (int c = c_first; c <= c_last; ++c) {
      at_chunk(c);
      sync();  // the previous chunk's values are used up
      stage(true, c, bufs, true);
      landed(true, bufs);
      float s[kChunk / 8][4];
      scores(c, bufs, s);
      sync();  // every score is out of the keys
      stage(false, c, bufs, true);
      landed(false, bufs);
      accumulate(s, bufs);
    }
  }
}

// ---- the kernels' bodies -----------------------------------------------------------------------------------------

// kBufs, walk_chunks' chunk buffers: the tiles kernel's block takes two (one for keys and one for values, so that
// the next chunk's loads fly during the current one's MMAs) or, on devices with less shared memory, one for both in
// turn; the split kernel's warps one, two or three each, three where a block of them fits (an f16 cache on sm_90):
// a decode walk is only a few chunks a warp, and the third lets a chunk's keys and values and the next chunk's keys
// fly at once. The same bits in every case.
template <int kDp, int kBufs>
__host__ __device__ constexpr size_t tiles_smem() {
  return sizeof(__half) * static_cast<size_t>((16 * kWarps + kBufs * kChunk) * smem_stride<kDp>()) +
         sizeof(float) * static_cast<size_t>(kWarps * 16 * kDp) + sizeof(int) * 2 * kWarps;
}
template <int kDp, int kBufs>
__host__ __device__ constexpr size_t split_smem() {
  return sizeof(__half) * static_cast<size_t>((16 + kWarps * kBufs * kChunk) * smem_stride<kDp>());
}
// The combine takes the segments kCombineGroup at a time (one a thread): a record each (its fold and its l), their
// O parts (kDp floats each, copied in whole by cp.async) and the warps' maxima. A group's set-up waits on global
// memory, so fewer groups is less waiting: 128 (a depth of 16K keys is 129 segments, two groups) takes 66 KiB of
// shared memory at kDp 128, above the 48 KiB a launch gets without an opt-in (attention_flash.cu asks for it).
// kTwo (where a block gets the room: sm_80 and sm_90): two O buffers, so that the next group's O parts and its
// records' m and l are fetched while this group's chain runs, and a group's set-up waits only the first time.
// The chain reads kCombineAhead folds' operands into registers before folding them (a group's folds are padded
// with empty ones to a multiple of it: an empty fold leaves the totals as they are).
constexpr int kCombineGroup = 128;
constexpr int kCombineAhead = 8;
static_assert(kCombineGroup % kCombineAhead == 0, "a group's padded folds stay in the group's shared memory");
struct SegmentFold {
  Fold f;
  float l;
};
template <int kDp, bool kTwo>
__host__ __device__ constexpr size_t combine_smem() {
  return sizeof(SegmentFold) * kCombineGroup +
         sizeof(float) * (static_cast<size_t>(kTwo ? 2 : 1) * kCombineGroup * kDp + kWarps);
}

// Tiles (prefill): a block per (64 rows of a kv head: by = the kv head; bx counted from the last rows, which see
// the most keys), each warp 16 rows; the block stages each chunk's keys, then its values, once for its warps.
template <Cache kCache, int kDp, int kBufs>
__host__ __device__ inline void tiles_body(const Args& a, const Place& at, unsigned char* smem) {
  constexpr int kS = smem_stride<kDp>();
  constexpr int kRows = 16 * kWarps;
  auto* qs = reinterpret_cast<__half*>(smem);                // [kRows][kS]
  __half* kv = qs + kRows * kS;                              // [kChunk][kS]: the chunk's keys (then its values)
  static_assert(kBufs == 1 || kBufs == 2, "a tiles block takes one or two chunk buffers");
  __half* vbuf = kBufs > 1 ? kv + kChunk * kS : kv;          // [kChunk][kS]: its values
  auto* tot = reinterpret_cast<float*>(vbuf + kChunk * kS);  // per warp [kDp / 8][4][32]: the total's O fragments
  int* bounds = reinterpret_cast<int*>(tot + kWarps * 16 * kDp);  // per warp lo, hi

  const Operands& o = a.o;
  const int tid = at.tid, lane = tid % 32, warp = tid / 32;
  const int kvh = at.by;
  const int64_t row0 = static_cast<int64_t>(at.gx - 1 - at.bx) * kRows;
  const int64_t koff = static_cast<int64_t>(kvh) * o.head_dim;

  stage_q<kDp>(o, kvh, row0, qs, tid, kThreads, kRows);
  int lo[2], hi[2], lo_w, hi_w;
  row_bounds(a, row0 + 16 * warp, lane, lo, hi);
  warp_bounds(lo, hi, lo_w, hi_w);
  if (lane == 0) bounds[2 * warp] = lo_w, bounds[2 * warp + 1] = hi_w;
  sync_block();
  int lo_b = INT32_MAX, hi_b = -1;
  #pragma unroll
  for (int w = 0; w < kWarps; ++w) lo_b = imin(lo_b, bounds[2 * w]), hi_b = imax(hi_b, bounds[2 * w + 1]);

  uint32_t qf[kDp / 16][4];
  load_q_frags<kDp>(qs + 16 * warp * kS, lane, qf);
  float* my_tot = tot + warp * 16 * kDp;
  for (int i = lane; i < 16 * kDp; i += 32) my_tot[i] = 0.0f;
  float m_tot[2] = {-INFINITY, -INFINITY}, l_tot[2] = {0.0f, 0.0f};
  SegState<kDp> st;
  st.reset();
  // Folds the segment into the total (fold_weights), then starts the next segment.
  auto close_segment = [&]() {
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float m_new = fmaxf(m_tot[r], st.m[r]);
      const Fold f = fold_weights(m_tot[r], st.m[r], m_new);
      l_tot[r] = fold_value(f, l_tot[r], st.l[r]);
      m_tot[r] = f.kind == 0 ? m_tot[r] : m_new;
      #pragma unroll
      for (int dt = 0; dt < kDp / 8; ++dt) {
        float* t = my_tot + (dt * 4 + 2 * r) * 32 + lane;
        t[0] = fold_value(f, t[0], st.o[dt][2 * r]);
        t[32] = fold_value(f, t[32], st.o[dt][2 * r + 1]);
      }
    }
    st.reset();
  };

  if (hi_b >= 0) {
    const int c_first = lo_b / kChunk, c_last = hi_b / kChunk;
    const int chunks_per_seg = a.seg_keys / kChunk;
    // q8_0 staged raw: the block's raw copies after its shared memory's other parts (a key buffer, and a value one
    // with two).
    const bool raw = kCache == Cache::Q8_0 && a.q8_unit != 0;
    unsigned char* rawk = smem + tiles_smem<kDp, kBufs>();
    unsigned char* rawv = kBufs > 1 ? rawk + q8_raw_bytes<kDp>() : rawk;
    walk_chunks<kBufs>(
        c_first, c_last, kv, kChunk * kS,
        [&](bool keys, int c, __half* buf, bool wait) {
          if (raw) {
            stage_q8_raw(keys ? o.k : o.v, keys ? o.k_stride : o.v_stride, koff, o.head_dim, c * kChunk, lo_b, hi_b + 1,
                         keys ? rawk : rawv, a.q8_unit, tid, kThreads, wait);
            return;
          }
          stage_chunk<kCache, kDp>(keys ? o.k : o.v, keys ? o.k_stride : o.v_stride, koff, o.head_dim, c * kChunk, lo_b,
                                   hi_b + 1, o.vec4 != 0, a.vec16 != 0, buf, tid, kThreads, wait);
        },
        [] { sync_block(); },
        [&](int c) {
          if (c > c_first && c % chunks_per_seg == 0) close_segment();
        },
        [&](int c, const __half* ks, float (&s)[kChunk / 8][4]) {
          chunk_scores<kDp>(qf, ks, lane, c * kChunk, lo, hi, a.scale_log2, s);
        },
        [&](float (&s)[kChunk / 8][4], const __half* vs) { chunk_accumulate<kDp>(s, vs, lane, st); }, raw,
        [&](bool keys, __half* buf) { q8_convert<kDp>(keys ? rawk : rawv, o.head_dim, buf, tid, kThreads); });
    close_segment();
  }

  // The sink logit (a segment with l = 1 and O = 0), then O / L.
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = row0 + 16 * warp + lane / 4 + 8 * r;
    if (row >= static_cast<int64_t>(o.n_tok) * o.group) continue;
    const int t = static_cast<int>(row / o.group), h = kvh * o.group + static_cast<int>(row % o.group);
    float* out = out_row(o, t, h);
    const bool bad = hi[r] < 0;
    float l_fin = l_tot[r];
    Fold fs{1.0f, 0.0f, 2};
    if (a.sinks != nullptr && !bad) {
      const float m_sink = mul_rn(a.sinks[h], kLog2e);
      fs = fold_weights(m_tot[r], m_sink, fmaxf(m_tot[r], m_sink));
      l_fin = fold_value(fs, l_tot[r], 1.0f);
    }
    #pragma unroll
    for (int dt = 0; dt < kDp / 8; ++dt) {
      #pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int d = dt * 8 + 2 * (lane % 4) + e;
        if (d >= o.head_dim) continue;
        float v = my_tot[(dt * 4 + 2 * r + e) * 32 + lane];
        if (a.sinks != nullptr) v = sink_scaled(fs, v);
        out[d] = bad ? quiet_nan() : div_c(v, l_fin);
      }
    }
  }
}

// Split: a block per (kWarps segments at a time: bx, strided over the grid; a 16-row tile of a kv head: by); each
// warp one segment, its state to scratch for the combine. Returns early where its rows see nothing.
template <Cache kCache, int kDp, int kBufs>
__host__ __device__ inline void split_body(const Args& a, const Place& at, unsigned char* smem) {
  constexpr int kS = smem_stride<kDp>();
  auto* qs = reinterpret_cast<__half*>(smem);  // [16][kS]
  const int tid = at.tid, lane = tid % 32, warp = tid / 32;
  __half* kv = qs + 16 * kS + warp * kBufs * kChunk * kS;  // the warp's own chunk buffers (walk_chunks)
  const Operands& o = a.o;
  const int kvh = at.by / a.row_tiles;
  const int64_t row0 = static_cast<int64_t>(at.by % a.row_tiles) * 16;
  const int64_t koff = static_cast<int64_t>(kvh) * o.head_dim;

  // The tile's q values load while the positions do (neither waits for the other).
  constexpr int kQPer = 16 * kDp / kThreads;
  static_assert(kQPer * kThreads == 16 * kDp, "the q tile in whole rounds of the block's threads");
  float qv[kQPer];
  load_q<kDp, kQPer>(o, kvh, row0, tid, kThreads, 16, qv);
  int lo[2], hi[2], lo_w, hi_w;
  row_bounds(a, row0, lane, lo, hi);
  warp_bounds(lo, hi, lo_w, hi_w);  // every warp of the block has the same rows: they all return or none
  if (hi_w < 0) return;
  const int s_first = lo_w / a.seg_keys, s_last = hi_w / a.seg_keys;
  const int first_mine = s_first + at.bx * kWarps;
  if (first_mine > s_last) return;
  store_q<kDp, kQPer>(qv, qs, tid, kThreads, 16);
  sync_block();
  uint32_t qf[kDp / 16][4];
  load_q_frags<kDp>(qs, lane, qf);
  SegState<kDp> st;
  // q8_0 staged raw (one or two buffers): the warp's raw copies after the block's other shared memory (a key
  // buffer, and a value one with two).
  static_assert(kBufs <= 2 || kCache != Cache::Q8_0, "q8_0 chunks staged raw take one or two buffers");
  const bool raw = kCache == Cache::Q8_0 && a.q8_unit != 0;
  unsigned char* rawk = smem + split_smem<kDp, kBufs>() + warp * kBufs * q8_raw_bytes<kDp>();
  unsigned char* rawv = kBufs > 1 ? rawk + q8_raw_bytes<kDp>() : rawk;
  const int stride = at.gx * kWarps;
  for (int seg = first_mine + warp; seg <= s_last; seg += stride) {
    st.reset();
    const int c_first = imax(seg * a.seg_keys, lo_w) / kChunk;
    const int c_last = imin(seg * a.seg_keys + a.seg_keys - 1, hi_w) / kChunk;
    walk_chunks<kBufs>(
        c_first, c_last, kv, kChunk * kS,
        [&](bool keys, int c, __half* buf, bool wait) {
          if (raw) {
            stage_q8_raw(keys ? o.k : o.v, keys ? o.k_stride : o.v_stride, koff, o.head_dim, c * kChunk, lo_w, hi_w + 1,
                         keys ? rawk : rawv, a.q8_unit, lane, 32, wait);
            return;
          }
          stage_chunk<kCache, kDp>(keys ? o.k : o.v, keys ? o.k_stride : o.v_stride, koff, o.head_dim, c * kChunk, lo_w,
                                   hi_w + 1, o.vec4 != 0, a.vec16 != 0, buf, lane, 32, wait);
        },
        [] { sync_warp(); }, [](int) {},
        [&](int c, const __half* ks, float (&s)[kChunk / 8][4]) {
          chunk_scores<kDp>(qf, ks, lane, c * kChunk, lo, hi, a.scale_log2, s);
        },
        [&](float (&s)[kChunk / 8][4], const __half* vs) { chunk_accumulate<kDp>(s, vs, lane, st); }, raw,
        [&](bool keys, __half* buf) { q8_convert<kDp>(keys ? rawk : rawv, o.head_dim, buf, lane, 32); });
    // The records of the rows that exist; m = -inf marks a segment a row does not see.
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t row = row0 + lane / 4 + 8 * r;
      if (row >= static_cast<int64_t>(o.n_tok) * o.group) continue;
      const int t = static_cast<int>(row / o.group), h = kvh * o.group + static_cast<int>(row % o.group);
      float* rec = a.part + ((static_cast<int64_t>(t) * o.n_head + h) * a.n_seg + seg) * record_floats(kDp);
      if (lane % 4 == 0) rec[0] = st.m[r], rec[1] = st.l[r];
      #pragma unroll
      for (int dt = 0; dt < kDp / 8; ++dt) {
        rec[4 + dt * 8 + 2 * (lane % 4)] = st.o[dt][2 * r];
        rec[4 + dt * 8 + 2 * (lane % 4) + 1] = st.o[dt][2 * r + 1];
      }
    }
  }
}

// The combine: a block per (head: bx, token: by) folds the row's segments in ascending order, kCombineGroup at a
// time. Per group: the segments' O parts are copied to shared memory (cp.async) while their running maxima come
// from a block-wide prefix-max scan (max is exact in any order) and each segment's fold weights are computed in
// parallel; then thread d runs the chains of L and of value d over the group (fold_value: two products and a sum)
// with its operands in shared memory (a step's kind is the same for every thread: a uniform choice). With kTwo
// the next group's copies and its records' m and l are issued before this group's chain. Puts value d (= tid) of
// the row in `out_value`; the caller stores those below head_dim (and their Q8_1 copy on the device).
template <int kDp, bool kTwo>
__host__ __device__ inline void combine_body(const Args& a, const Place& at, unsigned char* smem, float& out_value) {
  auto* folds = reinterpret_cast<SegmentFold*>(smem);          // [kCombineGroup]
  auto* so0 = reinterpret_cast<float*>(folds + kCombineGroup);  // [kTwo ? 2 : 1][kCombineGroup][kDp]: the O parts
  float* warp_max = so0 + (kTwo ? 2 : 1) * kCombineGroup * kDp;  // [kWarps]
  const Operands& o = a.o;
  const int h = at.bx, t = at.by, tid = at.tid, lane = tid % 32, warp = tid / 32;
  const int32_t p = o.pos[t];
  if (p < 0 || p >= o.n_ctx) {
    out_value = quiet_nan();
    return;
  }
  const int s_first = window_first_key(p, a.window) / a.seg_keys, s_last = p / a.seg_keys;
  const float* recs = a.part + (static_cast<int64_t>(t) * o.n_head + h) * a.n_seg * record_floats(kDp);
  float M = -INFINITY, L = 0.0f, O = 0.0f;
  const int d = tid < kDp ? tid : kDp - 1;  // threads past the head read some value and store none
  static_assert(kCombineGroup <= kThreads, "a thread per segment of a group");
  // A group's O parts (n records of kDp floats, 16-byte aligned: a record is kDp + 4 floats, O at 4) into `so`,
  // committed as one group of copies, and this thread's record's m and l.
  const auto fetch = [&](int g0, float* so, float& m, float& l) {
    const int n = imin(kCombineGroup, s_last - g0 + 1);
    for (int i = tid; i < n * (kDp / 4); i += kThreads) {
      const int k = i / (kDp / 4), q = i % (kDp / 4);
      copy16_async(so + k * kDp + 4 * q, recs + static_cast<int64_t>(g0 + k) * record_floats(kDp) + 4 + 4 * q, true);
    }
    stage_commit();
    const float* rec = recs + static_cast<int64_t>(g0 + imin(tid, n - 1)) * record_floats(kDp);
    m = tid < n ? rec[0] : -INFINITY;
    l = rec[1];
  };
  float m = -INFINITY, l = 0.0f;
  fetch(s_first, so0, m, l);
  for (int g0 = s_first, gi = 0; g0 <= s_last; g0 += kCombineGroup, ++gi) {
    const int n = imin(kCombineGroup, s_last - g0 + 1);
    const float* so = so0 + (kTwo ? (gi % 2) * kCombineGroup * kDp : 0);
    float v = m;  // the warp's inclusive prefix max
    for (int k = 1; k < 32; k *= 2) {
      const float u = shfl_up_f(v, k);
      if (lane >= k) v = fmaxf(v, u);
    }
    if (lane == 31) warp_max[warp] = v;
    sync_block();
    float before = M;
    for (int w = 0; w < warp; ++w) before = fmaxf(before, warp_max[w]);
    const float up = shfl_up_f(v, 1);
    const float excl = lane == 0 ? before : fmaxf(before, up);
    const Fold f = fold_weights(excl, m, fmaxf(excl, m));
    const int n_padded = (n + kCombineAhead - 1) / kCombineAhead * kCombineAhead;
    if (tid < n) {
      folds[tid] = {f, l};
    } else if (tid < n_padded) {
      folds[tid] = {{0.0f, 0.0f, 0}, 0.0f};  // empty: fold_value keeps the totals
    }
    float group_max = M;
    #pragma unroll
    for (int w = 0; w < kWarps; ++w) group_max = fmaxf(group_max, warp_max[w]);
    // The next group's fetch (its buffer was last read by the chain before the previous group's closing sync).
    const bool next = kTwo && g0 + kCombineGroup <= s_last;
    if (next) fetch(g0 + kCombineGroup, so0 + ((gi + 1) % 2) * kCombineGroup * kDp, m, l);
    if (next) {
      stage_wait_until<1>();
    } else {
      stage_wait_until<0>();
    }
    sync_block();
    // The chains of L and of value d, in ascending segment order, kCombineAhead folds' operands read into
    // registers before they are folded (the padded folds past n are empty; their O parts are stale values that no
    // result takes).
    for (int k0 = 0; k0 < n_padded; k0 += kCombineAhead) {
      SegmentFold sf[kCombineAhead];
      float ov[kCombineAhead];
      #pragma unroll
      for (int u = 0; u < kCombineAhead; ++u) {
        sf[u] = folds[k0 + u];
        ov[u] = so[(k0 + u) * kDp + d];
      }
      #pragma unroll
      for (int u = 0; u < kCombineAhead; ++u) {
        L = fold_value(sf[u].f, L, sf[u].l);
        O = fold_value(sf[u].f, O, ov[u]);
      }
    }
    M = group_max;
    sync_block();  // folds, so and warp_max are written again by the next group
    if (!kTwo && g0 + kCombineGroup <= s_last) fetch(g0 + kCombineGroup, so0, m, l);
  }
  if (a.sinks != nullptr) {
    const float m_sink = mul_rn(a.sinks[h], kLog2e);
    const Fold f = fold_weights(M, m_sink, fmaxf(M, m_sink));
    L = fold_value(f, L, 1.0f);
    O = sink_scaled(f, O);
  }
  out_value = div_c(O, L);
}

}  // namespace strata::gpu::attention::flash
