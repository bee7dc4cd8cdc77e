// GELU's arithmetic (backend 1.7; core/src/reference/op_gelu.cpp), one value at a time, host and device. The
// reference's tanh form is gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) x (1 + 0.044715 x^2), in double.
//   gelu_tanh_f (i[0] = 0, the default kernel): the same form written with the logistic function of 2u (which
//     0.5 (1 + tanh u) is), so that no 1 + tanh(u) cancels where tanh u nears -1: x2 = x * x,
//     p = fma(0.044715, x2, 1), u = (sqrt(2/pi) * x) * p; for u >= 0 (and NaN) x / (1 + exp(-2u)), for u < 0
//     x * (e / (1 + e)) with e = exp(2u) (no overflow of exp where the result is a float); exp_c and IEEE
//     operations with x86's NaN bits (canonical_math.cuh). A few float ulp from the reference where |u| is small,
//     the relative error growing like |u| ulp for negative x (where the values are below 1e-6 |x|).
//   gelu_f16_table (i[0] = 1, every kernel): ggml's table, f16(gelu(f16(x))) for -10 < x < 10, 0 at or below -10,
//     x otherwise (NaN included): the reference's own table (format::gelu_f16_table, built once on the host in
//     float as ggml builds its table, with the host's tanhf, which no device computation reproduces bit for bit),
//     uploaded by the context (Context::upload_gelu_table) and looked up at x's f16 bits.
//   gelu_tanh_f64ref (i[0] = 0 under canonical_double): the reference's double expression; its tanh is the
//     device's, which may differ from the host's libm in the last bit of a double (rarely visible after rounding to
//     float).
#pragma once

#include <cmath>

#include "canonical_math.cuh"

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

// i[0] = 1: 0 at or below -10, x at 10 and above (and NaN), else the table's entry for x rounded to f16 (nearest
// even: the device's conversion is format::fp32_to_fp16's). `table` is format::gelu_f16_table's 65536 floats.
__host__ __device__ __forceinline__ float gelu_f16_table(float x, const float* table) {
  if (x <= -10.0f) return 0.0f;
  if (!(x < 10.0f)) return x;
  return table[float_to_half(x)];
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
