// ATTENTION's pieces shared by its two paths (attention_decode.cu: split-K over positions for a few tokens;
// attention_prefill.cu: tiles of queries sharing each loaded key tile): the cache element loads, and the two ways
// of evaluating a score's 32-lane dot (docs/CANONICAL_ARITHMETIC.md section 6) with dot32_d's bits, one score per
// thread: the definition's tree over the 32 lane accumulators is a perfect binary tree whose leaves, left to right,
// are accumulators bitrev5(0), bitrev5(1), ...; a binary counter of finished subtrees (tree_push) adds them exactly
// as the tree does, and the leaves are independent, so a thread keeps many in flight. (A warp's butterfly gives the
// same bits too, but spends ~3x the issue slots per score on shuffles.) Products of two floats are exact in double,
// so fma(q, k, acc) is acc + q * k bit for bit. Rows are padded with zeros to 32 * kT values (an exact +0.0 each).
#pragma once

#include <cstdint>

#include "gpu_runtime.cuh"
#include "kv_convert.cuh"
#include "strata/format/canonical_double.hpp"

namespace strata::gpu::attention {

enum class Cache { F32, F16, Q8_0 };
constexpr int kCacheQ8Bytes = 34;
constexpr int kLanes = format::kSum32Lanes;
constexpr int kThreads = 256;  // both paths' blocks
constexpr int kSquads = kThreads / kLanes;  // 32-lane groups of a block (a warp on NVIDIA, half a wavefront on CDNA)

// The op's operands as both paths read them.
struct Operands {
  const char* q;
  uint64_t q_head, q_tok;  // byte strides of q's heads and tokens
  const char* k;
  const char* v;
  uint64_t k_stride, v_stride;  // bytes between cache columns
  const int32_t* pos;
  char* dst;
  uint64_t d_stride;
  int head_dim, n_head, group, n_tok, n_ctx;
  int vec4;  // the caches' columns allow loads of 4 values at once (alignment checked on the host)
  double scale;
  // Backend 1.6 (gpt-oss): a sliding window (0: none; W: a token at position p sees keys p - W + 1 .. p only) and
  // the sinks (nullptr, or one logit per q head in the softmax's denominator, with no value row).
  int window;
  const float* sinks;
  // Backend 1.6 (deepseek2's latent attention): values per head, src2.ne[0] / n_kv_head. Only the portable rows
  // kernel (attention_flash.cu) reads it; every other kernel runs value heads of head_dim values alone (its
  // callers route or refuse other sizes) and places head h's output at h * head_dim.
  int value_dim;
};

// The first key a token at position p sees.
__host__ __device__ __forceinline__ int window_first_key(int p, int window) {
  return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
}

template <Cache kCache>
__host__ __device__ __forceinline__ float cache_value(const char* col, int64_t i) {
  if constexpr (kCache == Cache::F32) {
    return reinterpret_cast<const float*>(col)[i];
  } else if constexpr (kCache == Cache::F16) {
    return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(col)[i]);
  } else {
    const char* block = col + (i / 32) * kCacheQ8Bytes;
    const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
    return static_cast<float>(static_cast<int8_t>(block[2 + i % 32])) * d;
  }
}

// Values i..i+3 of a column (i a multiple of 4), when Operands::vec4 allows one 16- or 8-byte load; a q8_0 block
// holds 32 values with one scale, so 4 aligned ones share it.
template <Cache kCache>
__host__ __device__ __forceinline__ void cache_values4(const char* col, int64_t i, float (&out)[4]) {
  if constexpr (kCache == Cache::F32) {
    const float4 w = *reinterpret_cast<const float4*>(col + 4 * i);
    out[0] = w.x, out[1] = w.y, out[2] = w.z, out[3] = w.w;
  } else if constexpr (kCache == Cache::F16) {
    const uint2 w = *reinterpret_cast<const uint2*>(col + 2 * i);
    out[0] = f16_bits_to_f32(static_cast<uint16_t>(w.x & 0xffffu));
    out[1] = f16_bits_to_f32(static_cast<uint16_t>(w.x >> 16));
    out[2] = f16_bits_to_f32(static_cast<uint16_t>(w.y & 0xffffu));
    out[3] = f16_bits_to_f32(static_cast<uint16_t>(w.y >> 16));
  } else {
    const char* block = col + (i / 32) * kCacheQ8Bytes;
    const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(block));
#pragma unroll
    for (int u = 0; u < 4; ++u) out[u] = static_cast<float>(static_cast<int8_t>(block[2 + (i + u) % 32])) * d;
  }
}

// The accumulator of the 32-lane tree at depth-first leaf position p: bits reversed (5 bits).
STRATA_HD constexpr int tree_leaf(int p) {
  return ((p & 1) << 4) | ((p & 2) << 2) | (p & 4) | ((p & 8) >> 2) | ((p & 16) >> 4);
}

// Adds leaf p's accumulator v to the binary counter `stack` of finished subtrees (stack[b] holds a subtree of 2^b
// leaves while bit b of the count is set); after leaf 31, stack[5] holds the whole tree, i.e. the dot.
STRATA_HD inline void tree_push(double* stack, int p, double v) {
#pragma unroll
  for (int b = 0; b < 5; ++b) {
    if (((p >> b) & 1) == 0) {
      stack[b] = v;
      return;
    }
    v = stack[b] + v;
  }
  stack[5] = v;
}

// The prefill layout of a row of head_dim values, padded with zeros to 32 * kT: value d at (d % 32) * kT + d / 32,
// so a leaf's kT terms are adjacent. A zero pair adds an exact +0.0 to its accumulator, which changes nothing.
template <int kT>
STRATA_HD constexpr int permuted_index(int d) {
  return (d % kLanes) * kT + d / kLanes;
}

// A leaf's kT adjacent terms, floats or doubles (16-byte aligned on the device when kT * sizeof(E) is a multiple
// of 16: one 16-byte load per 4 floats or 2 doubles).
template <int kT, typename E>
STRATA_HD inline void load_terms(const E* p, E* out) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  constexpr int kVec = 16 / static_cast<int>(sizeof(E));
  constexpr bool kVector = kT % kVec == 0;
#else
  constexpr int kVec = 1;
  constexpr bool kVector = false;
#endif
  if constexpr (kVector && sizeof(E) == sizeof(float)) {
#pragma unroll
    for (int i = 0; i < kT; i += kVec) {
      const float4 w = *reinterpret_cast<const float4*>(p + i);
      out[i] = w.x, out[i + 1] = w.y, out[i + 2] = w.z, out[i + 3] = w.w;
    }
  } else if constexpr (kVector) {
#pragma unroll
    for (int i = 0; i < kT; i += kVec) {
      const double2 w = *reinterpret_cast<const double2*>(p + i);
      out[i] = w.x, out[i + 1] = w.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kT; ++i) out[i] = p[i];
  }
}

// kR x kC scores' 32-lane dots, one thread, from permuted rows of floats, or of doubles converted from floats
// (exact: the same products and sums, so the same bits): q row a at q + a * q_stride, key c at k + c * k_stride. Each leaf is an fma chain of its kT terms; the leaves go through tree_push in depth-first
// order, in four rounds of 8 (a subtree each, then combined as the top of the tree does), which bounds how many
// loads the compiler hoists at once.
template <int kT, int kR, int kC, typename E>
STRATA_HD inline void dot32_tile(const E* q, int q_stride, const E* k, int k_stride, double (&s)[kR][kC]) {
  double held8[kR][kC], held16[kR][kC];
#pragma unroll 1
  for (int round = 0; round < 4; ++round) {
    // Leaf 8 * round + p is accumulator tree_leaf(p) + (round's two bits reversed).
    const int low = ((round & 1) << 1) | (round >> 1);
    double stack[kR][kC][6];
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      const int l = tree_leaf(p) + low;
      E qv[kR][kT], kv[kC][kT];
#pragma unroll
      for (int a = 0; a < kR; ++a) load_terms<kT>(q + a * q_stride + l * kT, qv[a]);
#pragma unroll
      for (int c = 0; c < kC; ++c) load_terms<kT>(k + c * k_stride + l * kT, kv[c]);
#pragma unroll
      for (int a = 0; a < kR; ++a) {
#pragma unroll
        for (int c = 0; c < kC; ++c) {
          double acc = 0.0;
#pragma unroll
          for (int i = 0; i < kT; ++i) {
            acc = format::fma_d(static_cast<double>(qv[a][i]), static_cast<double>(kv[c][i]), acc);
          }
          tree_push(stack[a][c], p, acc);
        }
      }
    }
#pragma unroll
    for (int a = 0; a < kR; ++a) {
#pragma unroll
      for (int c = 0; c < kC; ++c) {
        const double v = stack[a][c][3];  // the round's subtree of 8 leaves
        if (round == 0 || round == 2) {
          held8[a][c] = v;
        } else if (round == 1) {
          held16[a][c] = held8[a][c] + v;
        } else {
          s[a][c] = held16[a][c] + (held8[a][c] + v);
        }
      }
    }
  }
}

// Cache columns j0..j0+n-1 of one kv head (values koff..koff+D-1 of each) into shared rows `stride` elements
// apart, as floats or as doubles (each cache value's float converted once, exactly): permuted (the score layout,
// kT > 0) or as they are (kT == 0, the values' layout). Every thread of the block takes part; the loads of a
// thread are independent, so many are in flight at once.
template <Cache kCache, int kT, typename E>
__device__ __forceinline__ void load_columns(const char* base, uint64_t col_stride, int64_t koff, int head_dim,
                                             int j0, int n, bool vec4, E* out, int stride) {
  const int tid = static_cast<int>(threadIdx.x);
  // Loads in flight per thread: q8_0's scale loads and address arithmetic, next to the decode kernel's doubles,
  // spill its registers when unrolled, so one at a time there.
  constexpr int kUnroll = kCache == Cache::Q8_0 && sizeof(E) == sizeof(double) ? 1 : 4;
  auto place = [&](int jj, int d, float x) {
    if constexpr (kT > 0) {
      out[jj * stride + permuted_index<kT>(d)] = static_cast<E>(x);
    } else {
      out[jj * stride + d] = static_cast<E>(x);
    }
  };
  if (vec4) {
    const int quads = head_dim / 4, items = n * quads;
#pragma unroll kUnroll
    for (int i = tid; i < items; i += kThreads) {
      const int jj = i / quads, d = (i % quads) * 4;
      float x[4];
      cache_values4<kCache>(base + static_cast<uint64_t>(j0 + jj) * col_stride, koff + d, x);
      // Doubles: the 32 threads' k-th stores would fall on 4 of the 16 eight-byte bank slots (8-way conflicts) in
      // order; rotating each thread's order by its quad spreads them over all 16 (the permuted layout puts quad
      // q's values 8 * kT bytes apart, plus (4q + u) / 32; the plain one 32 bytes apart).
      const int q = d / 4;
      const int rot = sizeof(E) == sizeof(double) ? (kT > 0 ? q : q >> 2) & 3 : 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int u = (k + rot) & 3;
        place(jj, d + u, u == 0 ? x[0] : u == 1 ? x[1] : u == 2 ? x[2] : x[3]);
      }
    }
  } else {
    const int items = n * head_dim;
#pragma unroll kUnroll
    for (int i = tid; i < items; i += kThreads) {
      const int jj = i / head_dim, d = i % head_dim;
      place(jj, d, cache_value<kCache>(base + static_cast<uint64_t>(j0 + jj) * col_stride, koff + d));
    }
  }
}

// Zeros the padding values head_dim..32*kT-1 of `rows` permuted rows (once: the loads never write there).
template <int kT, typename E>
__device__ __forceinline__ void zero_padding(E* rows, int n_rows, int stride, int head_dim) {
  const int pad = kLanes * kT - head_dim;
  for (int i = static_cast<int>(threadIdx.x); i < n_rows * pad; i += kThreads) {
    rows[(i / pad) * stride + permuted_index<kT>(head_dim + i % pad)] = E(0);
  }
}

// q of (token t, head h) into a permuted shared row.
__host__ __device__ __forceinline__ const float* q_row(const Operands& o, int t, int h) {
  return reinterpret_cast<const float*>(o.q + static_cast<uint64_t>(t) * o.q_tok + static_cast<uint64_t>(h) * o.q_head);
}

}  // namespace strata::gpu::attention
