// ROPE's per-pair arithmetic (docs/CANONICAL_ARITHMETIC.md section 6), shared by op_rope.cu and the fused head
// kernel: pair k of a head is (2k, 2k + 1) in mode 0 and (k, k + n_rot / 2) in neox mode; theta = (pos * scale) *
// inv_freq_k; (a, b) -> (float)(a cos - b sin), (float)(a sin + b cos) with sincos_d.
#pragma once

#include "strata/format/canonical_double.hpp"

namespace strata::gpu {

constexpr int kRopeModeAdjacent = 0, kRopeModeNeox = 2;
constexpr int kRopeMaxPairs = 128;  // n_rot <= 256: the inverse frequencies travel in the kernels' arguments

__host__ __device__ inline void rope_pair_index(int k, int n_rot, bool neox, int& ia, int& ib) {
  ia = neox ? k : 2 * k;
  ib = neox ? k + n_rot / 2 : 2 * k + 1;
}

__host__ __device__ inline void rope_rotate(float xa, float xb, double pos, double scale, double inv_freq, float& ya,
                                            float& yb) {
  double s, c;
  format::sincos_d(pos * scale * inv_freq, &s, &c);
  const double va = static_cast<double>(xa);
  const double vb = static_cast<double>(xb);
  ya = static_cast<float>(va * c - vb * s);
  yb = static_cast<float>(va * s + vb * c);
}

}  // namespace strata::gpu
