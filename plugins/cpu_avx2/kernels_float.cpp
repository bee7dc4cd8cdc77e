// Kernels of F32, F16 and BF16 weights against float activations (docs/CANONICAL_ARITHMETIC.md section 4):
// lane r of one 8-lane accumulator takes fma(w_i, x_i, .) for i = r mod 8 in ascending i, then the fixed tree.
// The eight accumulators are one register on every path, so the AVX-512 path runs this same code; four rows
// are interleaved to hide the fma latency.
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

template <class W>
STRATA_AVX2 void float_matvec(const unsigned char* w, size_t w_stride, int64_t rows, int64_t n,
                              const float* const* x, int n_tok, float* out, int64_t out_stride) {
  // Blocks of rows small enough to stay in the L2 cache while every token passes over them.
  const int64_t block = std::max<int64_t>(4, (96 << 10) / static_cast<int64_t>(w_stride) / 4 * 4);
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r1 = std::min(rows, r0 + block);
    for (int t = 0; t < n_tok; ++t) {
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
