// LAYER_NORM's per-row arithmetic (backend 1.7; core/src/reference/op_layer_norm.cpp), shared by op_layer_norm.cu
// and the host tests (tests/cuda_host/layer_norm_gelu_test.cu). A block of kLnBlock threads per row; two
// definitions, chosen per launch by Options::canonical_double:
//   float (the default): thread t takes values t, t + 256, ... in ascending order. The row's sum and then the sum of
//     its squared deviations are compensated float sums (float_pair.cuh): each thread keeps (s, c), s the running
//     float sum and c the sum of two_sum's exact errors (for squares also fma's exact error of d * d); the 256
//     threads' pairs combine by a fixed tree (m = 128 .. 1: thread t < m takes t + m) in shared memory. So the sums
//     are within a few 2^-40 of the exact ones and the order is fixed: no atomics, the same bits on every run.
//     mean = m_hi + m_lo (the sum over n as a float quotient and the quotient of its exact remainder);
//     x_i - mean as the pair (t, e - m_lo), t + e = x_i - m_hi exactly (two-sum), squared as the float
//     d_i = t + (e - m_lo); scale = 1 / sqrt((s + c) / n + eps) (IEEE division, addition, square root and
//     division); y_i = fma(t, scale, (e - m_lo) * scale), then fma(y_i, w_i, b_i), y_i * w_i or y_i + b_i. Within
//     about 3 float ulp of each term of the reference (2e-7 relative); sums of squares beyond the float range
//     (|x_i - mean| near 1e19) overflow where the reference's double does not.
//   double (the `_f64ref` kernel): the reference's operations in the reference's order: thread 0 sums the row in
//     double in ascending order, mean = sum / n, then sq = sum of (x_i - mean)^2 in ascending order, scale =
//     1 / sqrt(sq / n + eps); y_i = (float)((((double)x_i - mean) * scale) * w_i + b_i): the reference's bits.
#pragma once

#include <cmath>
#include <cstdint>

#include "canonical_math.cuh"
#include "float_pair.cuh"

namespace strata::gpu {

constexpr int kLnBlock = 256;
constexpr int64_t kLnMaxRow = int64_t{1} << 24;  // n is exact as a float

// ---- float (the default) ----

// One term of a thread's compensated sum: the running sum rounds, its exact error joins c.
__host__ __device__ __forceinline__ FloatPair ln_add(FloatPair acc, float x) {
  const FloatPair s = two_sum_f(acc.hi, x);
  return {s.hi, acc.lo + s.lo};
}

// One squared deviation (ln_deviation's pair, rounded to one float d): d * d as its float and its exact error, the
// float added as by ln_add.
__host__ __device__ __forceinline__ FloatPair ln_add_square(FloatPair acc, FloatPair dev) {
  const float d = dev.hi + dev.lo;
  const FloatPair p = two_prod_f(d, d);
  const FloatPair s = two_sum_f(acc.hi, p.hi);
  return {s.hi, acc.lo + (s.lo + p.lo)};
}

// Two threads' compensated sums as one (a's thread the lower).
__host__ __device__ __forceinline__ FloatPair ln_combine(FloatPair a, FloatPair b) {
  const FloatPair s = two_sum_f(a.hi, b.hi);
  return {s.hi, (a.lo + b.lo) + s.lo};
}

// The mean of a row from its compensated sum: hi = (s + c) / n rounded, lo = the quotient of what hi leaves.
__host__ __device__ __forceinline__ FloatPair ln_mean(FloatPair sum, int64_t n) {
  const float nf = static_cast<float>(n);
  const FloatPair t = two_sum_f(sum.hi, sum.lo);
  const float hi = div_c(t.hi, nf);
  const float rem = fma_c(-hi, nf, t.hi);  // exact: the remainder of a rounded quotient
  return {hi, div_c(rem + t.lo, nf)};
}

// x - mean as a pair: fl(x - m_hi) and its exact error less m_lo (one rounding of small values).
__host__ __device__ __forceinline__ FloatPair ln_deviation(float x, FloatPair mean) {
  const FloatPair t = two_sum_f(x, -mean.hi);
  return {t.hi, t.lo - mean.lo};
}

__host__ __device__ __forceinline__ float ln_scale(FloatPair sq, int64_t n, float eps) {
  return div_c(1.0f, sqrt_c(div_c(sq.hi + sq.lo, static_cast<float>(n)) + eps));
}

// Output value i from its deviation (a pair: the product with scale rounds once); w and b are nullptr when absent.
__host__ __device__ __forceinline__ float ln_value(FloatPair dev, float scale, const float* w, const float* b,
                                                  int64_t i) {
  const float y = fma_c(dev.hi, scale, dev.lo * scale);
  if (w != nullptr && b != nullptr) return fma_c(y, w[i], b[i]);
  if (w != nullptr) return y * w[i];
  if (b != nullptr) return y + b[i];
  return y;
}

#if defined(__CUDACC__) || defined(__HIPCC__)
// The block's total of the threads' compensated sums (the tree m = 128 .. 1), returned to every thread. Every
// thread of the block must call it (it has barriers); `lanes` is kLnBlock pairs of shared memory, free again when
// it returns (a barrier follows the last read).
__device__ __forceinline__ FloatPair ln_block_sum(FloatPair v, FloatPair* lanes) {
  const int t = static_cast<int>(threadIdx.x);
  lanes[t] = v;
  __syncthreads();
  for (int m = kLnBlock / 2; m > 0; m /= 2) {
    if (t < m) lanes[t] = ln_combine(lanes[t], lanes[t + m]);
    __syncthreads();
  }
  const FloatPair total = lanes[0];
  __syncthreads();
  return total;
}
#endif

// The same total on one thread (host tests): thread t's terms (`term` over values t, t + 256, ...), then the tree.
template <class Term>
inline FloatPair ln_sum_serial(const float* x, int64_t n, Term term) {
  FloatPair lanes[kLnBlock];
  for (int t = 0; t < kLnBlock; ++t) {
    FloatPair acc{0.0f, 0.0f};
    for (int64_t i = t; i < n; i += kLnBlock) acc = term(acc, x[i]);
    lanes[t] = acc;
  }
  for (int m = kLnBlock / 2; m > 0; m /= 2) {
    for (int t = 0; t < m; ++t) lanes[t] = ln_combine(lanes[t], lanes[t + m]);
  }
  return lanes[0];
}

// ---- double (canonical_double) ----

// mean and scale of a row as the reference computes them (one thread, ascending order).
__host__ __device__ __forceinline__ void ln_stats_f64ref(const float* x, int64_t n, float eps, double* mean,
                                                        double* scale) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum = sum + static_cast<double>(x[i]);
  const double m = sum / static_cast<double>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - m;
    sq = sq + d * d;
  }
  *mean = m;
  *scale = 1.0 / sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
}

__host__ __device__ __forceinline__ float ln_value_f64ref(float x, double mean, double scale, const float* w,
                                                         const float* b, int64_t i) {
  double y = (static_cast<double>(x) - mean) * scale;
  if (w != nullptr) y = y * static_cast<double>(w[i]);
  if (b != nullptr) y = y + static_cast<double>(b[i]);
  return static_cast<float>(y);
}

}  // namespace strata::gpu
