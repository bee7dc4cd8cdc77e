// ROPE's per-pair arithmetic (docs/CANONICAL_ARITHMETIC.md section 6), shared by op_rope.cu and the fused head
// kernel: pair k of a head is (2k, 2k + 1) in mode 0 and (k, k + n_rot / 2) in neox mode. Two definitions, chosen
// per launch by Options::canonical_double:
//   double (the `_f64ref` kernels, the CPU backends' arithmetic): theta = (pos * scale) * inv_freq_k; (a, b) ->
//     (float)(a cos - b sin), (float)(a sin + b cos) with sincos_d.
//   float (the default): rope_sincos_f below, theta and its reduction in float-float (two floats, fma-exact
//     products), then float polynomials; (a, b) -> fma(a, c, -(b * s)), fma(a, s, b * c).
// The host passes inv_freq_k (pow in double, the one libm of the process) as a double table, or as the float pair
// hi = (float)inv, lo = (float)(inv - hi) (rope_inv_freq_pair).
// YaRN (backend 1.6, format::RopeAngles): the table holds freq_k (inv_freq_k with YaRN's mix, in double on the
// host), `scale` is RopeAngles' pos_scale (1 with YaRN), and cos and sin are multiplied by mscale (attn_factor) before
// the rotation, in double or in float. Without YaRN the table, the scale and mscale = 1 give the bits of before.
// 2-D vision RoPE (mode 24, backend 1.7): neox pairs; the table holds each pair's frequency within its section
// (rope_fill_vision_freqs), the scale and mscale are 1, and the position is the pair's component (vision_component).
#pragma once

#include <cstdint>

#include "canonical_math.cuh"
#include "strata/format/canonical_double.hpp"

namespace strata::gpu {

constexpr int kRopeModeAdjacent = 0, kRopeModeNeox = 2;
constexpr int kRopeModeImrope = 40;  // backend 1.6: interleaved M-RoPE (Qwen3-VL), neox pairs
constexpr int kRopeModeVision = 24;  // backend 1.7: 2-D vision RoPE (Qwen3-VL's projector), neox pairs
constexpr int kRopeMaxPairs = 128;  // n_rot <= 256: the inverse frequencies travel in the kernels' arguments

// The kernels' table of inverse frequencies: doubles for the _f64ref kernels, hi/lo float pairs otherwise (1 KiB
// either way).
union RopeFreqs {
  double d[kRopeMaxPairs];
  struct {
    float hi[kRopeMaxPairs], lo[kRopeMaxPairs];
  } f;
};

// Fills the table for n_rot / 2 pairs from a ROPE op's floats f[0..5] (host code).
inline void rope_fill_freqs(RopeFreqs& t, const float* f, int n_rot, bool f64) {
  const format::RopeAngles angles(f);
  for (int k = 0; k < n_rot / 2; ++k) {
    const double inv = angles.freq(static_cast<double>(f[0]), k, n_rot);
    if (f64) {
      t.d[k] = inv;
    } else {
      t.f.hi[k] = static_cast<float>(inv);
      t.f.lo[k] = static_cast<float>(inv - static_cast<double>(t.f.hi[k]));
    }
  }
}

// The same without YaRN: freq_base alone.
inline void rope_fill_freqs(RopeFreqs& t, float freq_base, int n_rot, bool f64) {
  const float f[6] = {freq_base, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  rope_fill_freqs(t, f, n_rot, f64);
}

// Mode 24's table (host code): pair k < row_pairs is index k of the row section, pair k >= row_pairs index
// k - row_pairs of the column section, each frequency pow(freq_base, -2 index / (n_rot / 2)) (format::rope_inv_freq
// over n_rot / 2, as the reference); no freq_scale or YaRN.
inline void rope_fill_vision_freqs(RopeFreqs& t, float freq_base, int row_pairs, int n_rot, bool f64) {
  const int half = n_rot / 2;
  for (int k = 0; k < half; ++k) {
    const double inv = format::rope_inv_freq(static_cast<double>(freq_base), k < row_pairs ? k : k - row_pairs, half);
    if (f64) {
      t.d[k] = inv;
    } else {
      t.f.hi[k] = static_cast<float>(inv);
      t.f.lo[k] = static_cast<float>(inv - static_cast<double>(t.f.hi[k]));
    }
  }
}

// The angle's position scale and the cos/sin factor of a ROPE op (format::RopeAngles; both exact as floats: f[1]
// or 1, f[3] or 1).
struct RopeScaling {
  float pos_scale, mscale;
};
inline RopeScaling rope_scaling(const float* f) {
  const format::RopeAngles angles(f);
  return {static_cast<float>(angles.pos_scale), static_cast<float>(angles.mscale)};
}

__host__ __device__ __forceinline__ void rope_pair_index(int k, int n_rot, bool neox, int& ia, int& ib) {
  ia = neox ? k : 2 * k;
  ib = neox ? k + n_rot / 2 : 2 * k + 1;
}

// ---- interleaved M-RoPE (mode 40, backend 1.6) ----
// A token has four position components (t, row, column, e). Pair k takes, with sector = k % (s0 + s1 + s2 + s3):
// row when sector % 3 == 1 && sector < 3 s1, column when sector % 3 == 2 && sector < 3 s2, t when
// sector % 3 == 0 && sector < 3 s0, e otherwise. The rotation is neox's (pairs (k, k + n_rot / 2)).
struct RopeSections {
  int s[4];
  int sum;  // > 0 (checked)
};

__host__ __device__ __forceinline__ int imrope_component(int k, const RopeSections& sec) {
  const int sector = k % sec.sum;
  if (sector % 3 == 1 && sector < 3 * sec.s[1]) return 1;
  if (sector % 3 == 2 && sector < 3 * sec.s[2]) return 2;
  if (sector % 3 == 0 && sector < 3 * sec.s[0]) return 0;
  return 3;
}

// Component c of token t's position: src1 [n_tok, 4] component-major (`comp_stride` int32s between components),
// or [n_tok] (comp_stride 0): a text token, (p, p, p, 0).
__host__ __device__ __forceinline__ int32_t imrope_position(const int32_t* pos, int64_t t, int64_t comp_stride, int c) {
  if (comp_stride == 0) return c == 3 ? 0 : pos[t];
  return pos[t + static_cast<int64_t>(c) * comp_stride];
}

// ---- 2-D vision RoPE (mode 24, backend 1.7) ----
// Pair k turns by the row component (1) when k < row_pairs (i[2]), else by the column component (2); src1 is
// [n_tok, 4] component-major, read with imrope_position.
__host__ __device__ __forceinline__ int vision_component(int k, int row_pairs) { return k < row_pairs ? 1 : 2; }

// ---- double (canonical_double) ----

__host__ __device__ __forceinline__ void rope_rotate(float xa, float xb, double pos, double scale, double inv_freq,
                                                     float& ya, float& yb, double mscale = 1.0) {
  double s, c;
  format::sincos_d(pos * scale * inv_freq, &s, &c);
  s = s * mscale;
  c = c * mscale;
  const double va = static_cast<double>(xa);
  const double vb = static_cast<double>(xb);
  ya = static_cast<float>(va * c - vb * s);
  yb = static_cast<float>(va * s + vb * c);
}

// ---- float (the default) ----

__host__ __device__ __forceinline__ float rint_c(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return rintf(x);
#else
  return std::rint(x);
#endif
}

// sin and cos of theta = (pos * scale) * (inv_hi + inv_lo), every step an IEEE binary32 operation:
//   P = (float)pos (exact below 2^24); a = P * scale, a_e = fma(P, scale, -a)            (P * scale = a + a_e)
//   t = a * inv_hi; t_e = fma(a, inv_hi, -t); t_e = fma(a, inv_lo, t_e); t_e = fma(a_e, inv_hi, t_e)
//   k = rint(t * 2/pi); r0 = fma(-k, C1, t)   (exact: C1 = (float)(pi/2), and |r0| < 1 with t's grid)
//   (s0, e0) = two_sum(r0, t_e); p = k * C2, p_e = fma(k, C2, -p); (s1, e1) = two_sum(s0, -p)
//   lo = ((e0 + e1) - p_e); lo = fma(-k, C3, lo); r = s1 + lo, r_e = lo - (r - s1)      (fast two-sum)
//   with C2 = (float)(pi/2 - C1), C3 = (float)(pi/2 - C1 - C2);
//   z = r * r; sin r = r + (r * z) * S(z) + r_e, S = -1/6 + z (1/120 + z (-1/5040 + z / 362880)) (Horner, fma);
//   cos r = fma(-z, C(z), 1) - r * r_e, C = 1/2 + z (-1/24 + z (1/720 + z (-1/40320 + z / 3628800)));
//   the quadrant k mod 4 swaps and negates as sincos_d.
// |r| stays within pi/4 + 0.03 (t_e is at most half an ulp of t), where both polynomials are within 3e-9 of the
// true values; the float-float theta keeps the angle within about 2^-46 |theta| (4e-9 rad at theta = 2^18).
__host__ __device__ __forceinline__ void rope_sincos_f(int32_t pos, float scale, float inv_hi, float inv_lo,
                                                       float& s_out, float& c_out) {
  const float P = static_cast<float>(pos);
  const float a = P * scale;
  const float a_e = fma_c(P, scale, -a);
  const float t = a * inv_hi;
  float t_e = fma_c(a, inv_hi, -t);
  t_e = fma_c(a, inv_lo, t_e);
  t_e = fma_c(a_e, inv_hi, t_e);
  const float C1 = float_from_bits(0x3fc90fdbu);   // 1.57079637
  const float C2 = float_from_bits(0xb33bbd2eu);   // -4.37113883e-08
  const float C3 = float_from_bits(0xa6f72cedu);   // -1.71512451e-15
  const float k = rint_c(t * float_from_bits(0x3f22f983u));  // 2/pi
  const float r0 = fma_c(-k, C1, t);
  // two_sum(r0, t_e)
  const float s0 = r0 + t_e;
  const float bb0 = s0 - r0;
  const float e0 = (r0 - (s0 - bb0)) + (t_e - bb0);
  const float p = k * C2;
  const float p_e = fma_c(k, C2, -p);
  // two_sum(s0, -p)
  const float s1 = s0 - p;
  const float bb1 = s1 - s0;
  const float e1 = (s0 - (s1 - bb1)) + (-p - bb1);
  float lo = (e0 + e1) - p_e;
  lo = fma_c(-k, C3, lo);
  const float r = s1 + lo;
  const float r_e = lo - (r - s1);
  const float z = r * r;
  float ps = float_from_bits(0x3638ef1du);  // 1/362880
  ps = fma_c(ps, z, float_from_bits(0xb9500d01u));  // -1/5040
  ps = fma_c(ps, z, float_from_bits(0x3c088889u));  // 1/120
  ps = fma_c(ps, z, float_from_bits(0xbe2aaaabu));  // -1/6
  const float sr = fma_c(r * z, ps, r) + r_e;
  float pc = float_from_bits(0x3493f27eu);  // 1/3628800
  pc = fma_c(pc, z, float_from_bits(0xb7d00d01u));  // -1/40320
  pc = fma_c(pc, z, float_from_bits(0x3ab60b61u));  // 1/720
  pc = fma_c(pc, z, float_from_bits(0xbd2aaaabu));  // -1/24
  pc = fma_c(pc, z, 0.5f);
  const float cr = fma_c(-z, pc, 1.0f) - r * r_e;
  switch (static_cast<int>(k) & 3) {
    case 0: s_out = sr; c_out = cr; break;
    case 1: s_out = cr; c_out = -sr; break;
    case 2: s_out = -sr; c_out = -cr; break;
    default: s_out = -cr; c_out = sr; break;
  }
}

// YaRN's attn_factor on rope_sincos_f's results (1: unchanged bits).
__host__ __device__ __forceinline__ void rope_mscale_f(float mscale, float& s, float& c) {
  s = s * mscale;
  c = c * mscale;
}

__host__ __device__ __forceinline__ void rope_rotate_f(float xa, float xb, float s, float c, float& ya, float& yb) {
  ya = fma_c(xa, c, -(xb * s));
  yb = fma_c(xa, s, xb * c);
}

}  // namespace strata::gpu
