// Row helpers of the dense ops, one code path for both ISA paths. Norms and attention compute in double and round
// to float once (docs/CANONICAL_ARITHMETIC.md section 6); their sums use the 32-lane order of
// strata/format/canonical_double.hpp, so the doubles equal the reference's and the GPU's.
#pragma once

#include <cstdint>

#include "simd.hpp"

namespace strata::cpu {

// sum of a[i] * b[i] in double, in the 32-lane order (eight 4-lane double registers, then the tree), over rows
// widened once (widen_row): n a multiple of 32, the padding zeros. A float times a float is exact in double, so
// this is the sum of (double)x * (double)y of the floats.
STRATA_AVX2 double dot32_dd(const double* a, const double* b, int64_t n);
// The same sum over float rows, widened in registers (no stores): for a row read once.
STRATA_AVX2 double dot32_d(const float* a, const float* b, int64_t n);
// out[0, n) = (double)x[i], then zeros up to `padded` (a multiple of 32 at least n).
STRATA_AVX2 void widen_row(const float* x, double* out, int64_t n, int64_t padded);
// sum of (double)x[i]^2 in the 256-lane order (RMS_NORM).
STRATA_AVX2 double sum_squares256_d(const float* x, int64_t n);
// out[i] = (float)((x[i] * s) * w[i]) in double (w may be null: (float)(x[i] * s)).
STRATA_AVX2 void scale_mul_d(const float* x, double s, const float* w, float* out, int64_t n);
// acc[i] = acc[i] + p * v[i] in double (a product, then a sum: two roundings), v a widened row.
STRATA_AVX2 void axpy_dd(double p, const double* v, double* acc, int64_t n);
// The same with v a float row.
STRATA_AVX2 void axpy_d(double p, const float* v, double* acc, int64_t n);
// out[i] = (float)(acc[i] / s).
STRATA_AVX2 void div_to_float(const double* acc, double s, float* out, int64_t n);
// out[i] = f16 -> f32 of h[i]; out[i] = f32 -> f16 of x[i] (round to nearest even).
STRATA_AVX2 void f16_to_f32_row(const uint16_t* h, float* out, int64_t n);
STRATA_AVX2 void f32_to_f16_row(const float* x, uint16_t* out, int64_t n);

}  // namespace strata::cpu
