// Error-free float steps: a value held as the unevaluated sum hi + lo of two floats, where one float's rounding is
// too coarse and double is not allowed (tests/cuda_ptx: no .f64 outside the `_f64ref` kernels): LAYER_NORM's row
// sums (layer_norm_row.cuh). Every step is an IEEE binary32 addition or multiplication or an explicit fma, and the
// plugin builds without contraction (--fmad=false; -ffp-contract=off for HIP and the host tests), so host and
// device give the same bits and tests/cuda_host checks the arithmetic the kernels run.
//   two_sum_f(a, b):  s + e == a + b exactly (Knuth; any magnitudes), s = fl(a + b).
//   two_prod_f(a, b): p + e == a * b exactly (barring underflow), by fma.
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

__host__ __device__ __forceinline__ FloatPair two_prod_f(float a, float b) {
  const float p = a * b;
  return {p, fma_c(a, b, -p)};
}

}  // namespace strata::gpu
