// GELU's arithmetic (backend 1.7; core/src/reference/op_gelu.cpp), one value at a time, host and device. The
// reference's tanh form is gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) x (1 + 0.044715 x^2), in double.
//   gelu_tanh_f (i[0] = 0, the default kernel): the same form written with the logistic function of 2u (which
//     0.5 (1 + tanh u) is), so that no 1 + tanh(u) cancels where tanh u nears -1: x2 = x * x,
//     p = fma(0.044715, x2, 1), u = (sqrt(2/pi) * x) * p; for u >= 0 (and NaN) x / (1 + exp(-2u)), for u < 0
//     x * (e / (1 + e)) with e = exp(2u) (no overflow of exp where the result is a float); exp_c and IEEE
//     operations with x86's NaN bits (canonical_math.cuh). A few float ulp from the reference where |u| is small,
//     the relative error growing like |u| ulp for negative x (where the values are below 1e-6 |x|).
//   gelu_f16_table (i[0] = 1, every kernel): ggml's table, f16(gelu(f16(x))) for -10 < x < 10, 0 at or below -10,
//     x otherwise (NaN included), f16 rounding to nearest even, with the reference's double rounding (gelu to
//     float, then to f16). The inner gelu is gelu_pair: the tanh form in float-float (float_pair.cuh), within
//     about 2^-40 of the exact value and then rounded to float once, so that it rounds like the reference's
//     double for every f16 input in [-10, 10] (tests/cuda_host/layer_norm_gelu_test.cu checks all of them).
//   gelu_tanh_f64ref (i[0] = 0 under canonical_double): the reference's double expression; its tanh is the
//     device's, which may differ from the host's libm in the last bit of a double (rarely visible after rounding to
//     float).
#pragma once

#include <cmath>

#include "canonical_math.cuh"
#include "float_pair.cuh"

namespace strata::gpu {

__host__ __device__ __forceinline__ float gelu_tanh_f(float x) {
  const float x2 = x * x;
  const float p = fma_c(float_from_bits(0x3d372713u), x2, 1.0f);  // 0.044715
  const float u = (float_from_bits(0x3f4c422au) * x) * p;         // sqrt(2/pi)
  if (u < 0.0f) {
    // x e / (1 + e) with e = exp(2u) <= 1: no overflow where the result is still a float (x near -10).
    const float e = exp_c(2.0f * u);
    return mul_x86(x, div_x86(e, add_x86(1.0f, e)));
  }
  return div_x86(x, add_x86(1.0f, exp_c(-2.0f * u)));  // NaN: x's
}

// The tanh form of `h` (|h| <= 10) in float-float: x^2 exactly, (1 + a x^2) and c x with a = 0.044715 and
// c = sqrt(2/pi) as pairs (the reference's double constants to 2^-48), u = c x (1 + a x^2), exp(-2u) (pair_exp:
// |2u| <= 87.4), then h / (1 + exp(-2u)) and one rounding to float. Zeros keep their sign (the reference's
// 0.5 * -0 * 1 is -0).
__host__ __device__ __forceinline__ float gelu_pair(float h) {
  if (h == 0.0f) return h;
  const FloatPair one{1.0f, 0.0f};
  const FloatPair cubic{float_from_bits(0x3d372713u), float_from_bits(0x30d4801fu)};      // 0.044715
  const FloatPair sqrt_2_pi{float_from_bits(0x3f4c422au), float_from_bits(0xb2c2bc9bu)};  // sqrt(2/pi)
  const FloatPair p = pair_add(one, pair_mul(cubic, two_prod_f(h, h)));
  const FloatPair u = pair_mul(pair_mul_f(sqrt_2_pi, h), p);
  const FloatPair e = pair_exp(FloatPair{-2.0f * u.hi, -2.0f * u.lo});
  const FloatPair g = pair_div(FloatPair{h, 0.0f}, pair_add(one, e));
  return g.hi + g.lo;
}

__host__ __device__ __forceinline__ float round_f16(float x) { return half_to_float(float_to_half(x)); }

__host__ __device__ __forceinline__ float gelu_f16_table(float x) {
  if (x <= -10.0f) return 0.0f;
  if (!(x < 10.0f)) return x;  // 10 and above, and NaN, unchanged
  return round_f16(gelu_pair(round_f16(x)));
}

// ---- double (canonical_double) ----

__host__ __device__ __forceinline__ float gelu_tanh_f64ref(float xf) {
  const double x = static_cast<double>(xf);
  const double arg = 0.79788456080286535587989211986876 * x * (1.0 + 0.044715 * x * x);
#ifdef STRATA_DEVICE_PASS
  const double t = tanh(arg);
#else
  const double t = std::tanh(arg);
#endif
  return static_cast<float>(0.5 * x * (1.0 + t));
}

}  // namespace strata::gpu
