// Row helpers of the dense ops, one code path for both ISA paths (8-lane accumulators and the fixed tree for
// every sum, so the bits never depend on the CPU).
#pragma once

#include <cstdint>

#include "simd.hpp"

namespace strata::cpu {

// sum of x[i] * x[i]: lane i mod 8 accumulates fma(x_i, x_i, .), then the fixed tree.
STRATA_AVX2 float sum_squares(const float* x, int64_t n);
// dot of two float rows the same way.
STRATA_AVX2 float dot_f32(const float* a, const float* b, int64_t n);
// largest element (NaN if any is NaN).
STRATA_AVX2 float max_row(const float* x, int64_t n);
// out[i] = exp_c(x[i] - m); returns the sum of out (8 lanes, fixed tree).
STRATA_AVX2 float exp_shifted_sum(const float* x, float m, float* out, int64_t n);
// out[i] = x[i] * s.
STRATA_AVX2 void scale(const float* x, float s, float* out, int64_t n);
// out[i] = x[i] * s * w[i]  (RMS norm's last step, two roundings in that order).
STRATA_AVX2 void scale_mul(const float* x, float s, const float* w, float* out, int64_t n);
// acc[i] = fma(p, v[i], acc[i]).
STRATA_AVX2 void axpy(float p, const float* v, float* acc, int64_t n);
// out[i] = f16 -> f32 of h[i]; out[i] = f32 -> f16 of x[i] (round to nearest even).
STRATA_AVX2 void f16_to_f32_row(const uint16_t* h, float* out, int64_t n);
STRATA_AVX2 void f32_to_f16_row(const float* x, uint16_t* out, int64_t n);

}  // namespace strata::cpu
