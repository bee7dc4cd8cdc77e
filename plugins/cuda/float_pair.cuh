// Float-float arithmetic: a value held as the unevaluated sum hi + lo of two floats, for the few places where one
// float's rounding is too coarse and double is not allowed (tests/cuda_ptx: no .f64 outside the `_f64ref`
// kernels): LAYER_NORM's row sums (layer_norm_row.cuh) and GELU's f16 table (gelu.cuh). Every step is an IEEE
// binary32 addition, multiplication or division, or an explicit fma, and the plugin builds without contraction
// (--fmad=false; -ffp-contract=off for HIP and the host tests), so host and device give the same bits and
// tests/cuda_host checks the arithmetic the kernels run.
//   two_sum_f(a, b):  s + e == a + b exactly (Knuth; any magnitudes), s = fl(a + b).
//   fast_two_sum_f:   the same when |a| >= |b| (or a == 0) (Dekker).
//   two_prod_f(a, b): p + e == a * b exactly (barring underflow), by fma.
//   pair_add, pair_mul, pair_mul_f, pair_div: about 2^-44 relative error each on normalized pairs (|lo| <=
//     ulp(hi) / 2); pair_exp about 2^-43 on |v| < 87.5.
#pragma once

#include <cmath>

#include "canonical_math.cuh"

namespace strata::gpu {

struct FloatPair {
  float hi, lo;
};

__host__ __device__ __forceinline__ FloatPair two_sum_f(float a, float b) {
  const float s = a + b;
  const float bb = s - a;
  const float e = (a - (s - bb)) + (b - bb);
  return {s, e};
}

__host__ __device__ __forceinline__ FloatPair fast_two_sum_f(float a, float b) {
  const float s = a + b;
  return {s, b - (s - a)};
}

__host__ __device__ __forceinline__ FloatPair two_prod_f(float a, float b) {
  const float p = a * b;
  return {p, fma_c(a, b, -p)};
}

__host__ __device__ __forceinline__ FloatPair pair_neg(FloatPair a) { return {-a.hi, -a.lo}; }

// a + b, both parts added exactly and the result renormalized twice.
__host__ __device__ __forceinline__ FloatPair pair_add(FloatPair a, FloatPair b) {
  const FloatPair s = two_sum_f(a.hi, b.hi);
  const FloatPair t = two_sum_f(a.lo, b.lo);
  const FloatPair u = fast_two_sum_f(s.hi, s.lo + t.hi);
  return fast_two_sum_f(u.hi, t.lo + u.lo);
}

__host__ __device__ __forceinline__ FloatPair pair_mul(FloatPair a, FloatPair b) {
  const FloatPair p = two_prod_f(a.hi, b.hi);
  float e = fma_c(a.hi, b.lo, p.lo);
  e = fma_c(a.lo, b.hi, e);
  return fast_two_sum_f(p.hi, e);
}

__host__ __device__ __forceinline__ FloatPair pair_mul_f(FloatPair a, float b) {
  const FloatPair p = two_prod_f(a.hi, b);
  return fast_two_sum_f(p.hi, fma_c(a.lo, b, p.lo));
}

// a / b: three float quotients, each of the remainder left by the ones before.
__host__ __device__ __forceinline__ FloatPair pair_div(FloatPair a, FloatPair b) {
  const float q1 = div_c(a.hi, b.hi);
  const FloatPair r1 = pair_add(a, pair_neg(pair_mul_f(b, q1)));
  const float q2 = div_c(r1.hi, b.hi);
  const FloatPair r2 = pair_add(r1, pair_neg(pair_mul_f(b, q2)));
  const float q3 = div_c(r2.hi, b.hi);
  return pair_add(fast_two_sum_f(q1, q2), FloatPair{q3, 0.0f});
}

// p * r + c, one Horner step with c given by its two parts' bits.
__host__ __device__ __forceinline__ FloatPair pair_horner(FloatPair p, FloatPair r, uint32_t c_hi, uint32_t c_lo) {
  return pair_add(pair_mul(p, r), FloatPair{float_from_bits(c_hi), float_from_bits(c_lo)});
}

// exp(v) for |v.hi| < 87.5: k = rint(v.hi / ln 2); r = v - k ln 2 with ln 2 in three floats (the first, 0x3f317200,
// has 15 significant bits, so k * it is exact for |k| <= 511); exp(r), |r| <= 0.347, by its Taylor polynomial of
// degree 11 (remainder below 2^-47) in Horner's form on pairs, 1/j! as pairs; then both parts times 2^k (exact
// while the result is a normal float).
__host__ __device__ __forceinline__ FloatPair pair_exp(FloatPair v) {
  const float k = rintf(v.hi * float_from_bits(0x3fb8aa3bu));  // 1 / ln 2
  FloatPair r = pair_add(v, FloatPair{-(k * float_from_bits(0x3f317200u)), 0.0f});
  r = pair_add(r, pair_neg(two_prod_f(k, float_from_bits(0x35bfbe8eu))));
  r = pair_add(r, FloatPair{-(k * float_from_bits(0x29779abdu)), 0.0f});
  FloatPair p{float_from_bits(0x32d7322bu), float_from_bits(0x25fea89cu)};  // 1/11!
  p = pair_horner(p, r, 0x3493f27eu, 0xa808760au);  // 1/10!
  p = pair_horner(p, r, 0x3638ef1du, 0x292ad8e6u);  // 1/9!
  p = pair_horner(p, r, 0x37d00d01u, 0xaabfcbfdu);  // 1/8!
  p = pair_horner(p, r, 0x39500d01u, 0xac3fcbfdu);  // 1/7!
  p = pair_horner(p, r, 0x3ab60b61u, 0xae13e93fu);  // 1/6!
  p = pair_horner(p, r, 0x3c088889u, 0xafeeeeefu);  // 1/5!
  p = pair_horner(p, r, 0x3d2aaaabu, 0xb0aaaaabu);  // 1/4!
  p = pair_horner(p, r, 0x3e2aaaabu, 0xb1aaaaabu);  // 1/3!
  p = pair_horner(p, r, 0x3f000000u, 0x00000000u);  // 1/2
  p = pair_horner(p, r, 0x3f800000u, 0x00000000u);  // 1
  p = pair_horner(p, r, 0x3f800000u, 0x00000000u);  // 1
  const float scale = pow2_c(static_cast<int>(k));
  return {p.hi * scale, p.lo * scale};
}

}  // namespace strata::gpu
