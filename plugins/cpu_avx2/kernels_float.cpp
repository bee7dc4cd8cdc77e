// Kernels of F32, F16 and BF16 weights against float activations (docs/CANONICAL_ARITHMETIC.md section 4):
// lane r of one 8-lane accumulator takes fma(w_i, x_i, .) for i = r mod 8 in ascending i, then the fixed tree.
// The eight accumulators are one register on every path, so the AVX-512 path runs this same code; four rows
// are interleaved to hide the fma latency, and tokens go in pairs (each weight vector loaded once for two).
#include <algorithm>

#include "kernels.hpp"
#include "simd.hpp"
#include "strata/format/types.hpp"

namespace strata::cpu {
namespace {

struct F32Weights {
  static constexpr int kBytes = 4;
  STRATA_INLINE_AVX2 static __m256 load8(const unsigned char* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};
struct F16Weights {
  static constexpr int kBytes = 2;
  STRATA_INLINE_AVX2 static __m256 load8(const unsigned char* p) { return _mm256_cvtph_ps(load128(p)); }
};
struct BF16Weights {
  static constexpr int kBytes = 2;
  STRATA_INLINE_AVX2 static __m256 load8(const unsigned char* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
  }
};

// The last n % 8 values, zero-padded (only lanes below `tail` are used).
template <class W>
STRATA_INLINE_AVX2 __m256 load_tail(const unsigned char* p, int tail) {
  alignas(32) unsigned char buf[32] = {};
  std::memcpy(buf, p, static_cast<size_t>(tail) * W::kBytes);
  return W::load8(buf);
}

template <class W, int kRows>
STRATA_AVX2 void float_rows(const unsigned char* w, size_t w_stride, int64_t n, const float* x, float* out,
                            int64_t out_step) {
  __m256 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_ps();
  const int64_t body = n / 8 * 8;
  for (int64_t i = 0; i < body; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm256_fmadd_ps(W::load8(w + r * w_stride + static_cast<size_t>(i) * W::kBytes), xv, acc[r]);
    }
  }
  const int tail = static_cast<int>(n - body);
  if (tail != 0) {
    // Only the lanes of the remaining values take an fma; the others keep their accumulator bits.
    const __m256 mask = _mm256_castsi256_ps(lane_mask(tail));
    alignas(32) float xt[8] = {};
    std::memcpy(xt, x + body, static_cast<size_t>(tail) * sizeof(float));
    const __m256 xv = _mm256_load_ps(xt);
    for (int r = 0; r < kRows; ++r) {
      const __m256 wv = load_tail<W>(w + r * w_stride + static_cast<size_t>(body) * W::kBytes, tail);
      acc[r] = _mm256_blendv_ps(acc[r], _mm256_fmadd_ps(wv, xv, acc[r]), mask);
    }
  }
  for (int r = 0; r < kRows; ++r) out[r * out_step] = tree_sum8(acc[r]);
}

// Four rows against two tokens at once: each weight vector is loaded (and converted) once for both tokens. Every
// (row, token) keeps its own accumulator with float_rows' lanes, order and tail, so the bits are float_rows'.
template <class W>
STRATA_AVX2 void float_rows4_tok2(const unsigned char* w, size_t w_stride, int64_t n, const float* x0,
                                  const float* x1, float* out0, float* out1) {
  __m256 a0[4], a1[4];
  for (int r = 0; r < 4; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  const int64_t body = n / 8 * 8;
  for (int64_t i = 0; i < body; i += 8) {
    const __m256 xv0 = _mm256_loadu_ps(x0 + i), xv1 = _mm256_loadu_ps(x1 + i);
    for (int r = 0; r < 4; ++r) {
      const __m256 wv = W::load8(w + r * w_stride + static_cast<size_t>(i) * W::kBytes);
      a0[r] = _mm256_fmadd_ps(wv, xv0, a0[r]);
      a1[r] = _mm256_fmadd_ps(wv, xv1, a1[r]);
    }
  }
  const int tail = static_cast<int>(n - body);
  if (tail != 0) {
    const __m256 mask = _mm256_castsi256_ps(lane_mask(tail));
    alignas(32) float xt0[8] = {}, xt1[8] = {};
    std::memcpy(xt0, x0 + body, static_cast<size_t>(tail) * sizeof(float));
    std::memcpy(xt1, x1 + body, static_cast<size_t>(tail) * sizeof(float));
    const __m256 xv0 = _mm256_load_ps(xt0), xv1 = _mm256_load_ps(xt1);
    for (int r = 0; r < 4; ++r) {
      const __m256 wv = load_tail<W>(w + r * w_stride + static_cast<size_t>(body) * W::kBytes, tail);
      a0[r] = _mm256_blendv_ps(a0[r], _mm256_fmadd_ps(wv, xv0, a0[r]), mask);
      a1[r] = _mm256_blendv_ps(a1[r], _mm256_fmadd_ps(wv, xv1, a1[r]), mask);
    }
  }
  for (int r = 0; r < 4; ++r) {
    out0[r] = tree_sum8(a0[r]);
    out1[r] = tree_sum8(a1[r]);
  }
}

template <class W>
STRATA_AVX2 void float_matvec(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n,
                              const float* const* x, int n_tok, float* out, int64_t out_stride) {
  // Blocks of rows small enough to stay in the L2 cache while every token passes over them.
  const int64_t block = std::max<int64_t>(4, (96 << 10) / static_cast<int64_t>(w_stride) / 4 * 4);
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r1 = std::min(rows, r0 + block);
    int t = 0;
    for (; t + 2 <= n_tok; t += 2) {
      float* o0 = out + t * out_stride;
      float* o1 = o0 + out_stride;
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) float_rows4_tok2<W>(w + r * w_stride, w_stride, n, x[t], x[t + 1], o0 + r, o1 + r);
      for (; r < r1; ++r) {
        float_rows<W, 1>(w + r * w_stride, w_stride, n, x[t], o0 + r, 1);
        float_rows<W, 1>(w + r * w_stride, w_stride, n, x[t + 1], o1 + r, 1);
      }
    }
    for (; t < n_tok; ++t) {
      float* o = out + t * out_stride;
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) float_rows<W, 4>(w + r * w_stride, w_stride, n, x[t], o + r, 1);
      for (; r < r1; ++r) float_rows<W, 1>(w + r * w_stride, w_stride, n, x[t], o + r, 1);
    }
  }
}

}  // namespace

void add_float_kernels(KernelTable& avx2, KernelTable& avx512) {
  using format::GgmlType;
  avx2.floating[static_cast<int>(GgmlType::F32)] = avx512.floating[static_cast<int>(GgmlType::F32)] =
      &float_matvec<F32Weights>;
  avx2.floating[static_cast<int>(GgmlType::F16)] = avx512.floating[static_cast<int>(GgmlType::F16)] =
      &float_matvec<F16Weights>;
  avx2.floating[static_cast<int>(GgmlType::BF16)] = avx512.floating[static_cast<int>(GgmlType::BF16)] =
      &float_matvec<BF16Weights>;
}

}  // namespace strata::cpu
