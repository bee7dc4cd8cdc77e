// docs/CANONICAL_ARITHMETIC.md section 6: the double-precision pieces that norms, rotary embeddings and attention
// share on every device. Written once for the host compilers and for nvcc/hipcc (host and device passes), with
// explicit fma and IEEE operations only, so the reference, cpu_avx2 and the GPU plugins get the same doubles.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

namespace strata::format {

STRATA_HD inline double fma_d(double a, double b, double c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// The L-lane sums of section 6 (L = 32 for attention's q.k, 256 for RMS_NORM's sum of squares): accumulator l
// (0..L-1) adds its terms i = l, l + L, l + 2L, ... in ascending order starting from +0.0; then, for m = L/2, ...,
// 2, 1, A_l = A_l + A_(l+m) for l < m (within a GPU warp the xor butterfly; on AVX2, 4-lane double registers).
// Products of two floats are exact in double, so fma or mul + add give the same accumulators.
constexpr int kSum32Lanes = 32;
constexpr int kNormLanes = 256;

template <int kLanes>
STRATA_HD inline double lanes_tree(double* acc) {
  for (int m = kLanes / 2; m > 0; m /= 2) {
    for (int l = 0; l < m; ++l) acc[l] = acc[l] + acc[l + m];
  }
  return acc[0];
}

// sum over i < n of (double)a[i] * (double)b[i] with the kLanes-lane order.
template <int kLanes>
STRATA_HD inline double dot_lanes_d(const float* a, const float* b, int64_t n) {
  double acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) {
    acc[i % kLanes] = acc[i % kLanes] + static_cast<double>(a[i]) * static_cast<double>(b[i]);
  }
  return lanes_tree<kLanes>(acc);
}
STRATA_HD inline double dot32_d(const float* a, const float* b, int64_t n) { return dot_lanes_d<kSum32Lanes>(a, b, n); }

// The same double as dot32_d by one thread without an array: node<m>(l) is accumulator l's value after the tree
// step m (node<32>(l) = A_l), evaluated depth first.
template <int kStep>
STRATA_HD inline double dot32_node(const float* a, const float* b, int n, int l) {
  if constexpr (kStep == kSum32Lanes) {
    double acc = 0.0;
    for (int i = l; i < n; i += kSum32Lanes) acc = acc + static_cast<double>(a[i]) * static_cast<double>(b[i]);
    return acc;
  } else {
    return dot32_node<2 * kStep>(a, b, n, l) + dot32_node<2 * kStep>(a, b, n, l + kStep);
  }
}
STRATA_HD inline double dot32_serial_d(const float* a, const float* b, int n) { return dot32_node<1>(a, b, n, 0); }

// ROPE's inverse frequency of pair p: pow(freq_base, -2p / n_rot) in double. Host code only (each plugin passes
// the values to its kernels), so every device uses the one libm of the process.
inline double rope_inv_freq(double freq_base, int p, int n_rot) { return std::pow(freq_base, -2.0 * p / n_rot); }

// ROPE's angles as every backend computes them (host code builds the table): theta_p = (pos * pos_scale) * freq_p,
// and cos, sin are multiplied by mscale. From the op's floats f[0] freq_base, f[1] freq_scale, f[2] YaRN's
// ext_factor, f[3] attn_factor, f[4] and f[5] the correction range:
//   plain (f[2] = 0): pos_scale = freq_scale, freq_p = rope_inv_freq (the arithmetic before YaRN, unchanged);
//   YaRN: pos_scale = 1, freq_p = rope_inv_freq * (freq_scale * (1 - mix_p) + mix_p) with
//         mix_p = ext_factor * (1 - clamp((p - lo) / max(0.001, hi - lo), 0, 1)), all in double;
//   mscale = f[3], or 1 when f[3] is 0 (ops written before YaRN leave it 0).
struct RopeAngles {
  double pos_scale = 1.0;
  double mscale = 1.0;
  bool yarn = false;
  double freq_scale = 1.0, ext = 0.0, lo = 0.0, hi = 0.0;

  explicit RopeAngles(const float* f)
      : pos_scale(f[2] != 0.0f ? 1.0 : static_cast<double>(f[1])),
        mscale(f[3] != 0.0f ? static_cast<double>(f[3]) : 1.0),
        yarn(f[2] != 0.0f),
        freq_scale(static_cast<double>(f[1])),
        ext(static_cast<double>(f[2])),
        lo(static_cast<double>(f[4])),
        hi(static_cast<double>(f[5])) {}

  double freq(double freq_base, int p, int n_rot) const {
    const double inv = rope_inv_freq(freq_base, p, n_rot);
    if (!yarn) return inv;
    const double span = hi - lo > 0.001 ? hi - lo : 0.001;
    double y = (static_cast<double>(p) - lo) / span;
    y = y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
    const double mix = ext * (1.0 - y);
    return inv * (freq_scale * (1.0 - mix) + mix);
  }
};

// Largest |x| sincos_d reduces accurately; beyond it (and for Inf, NaN) both results are NaN.
constexpr double kSincosLimit = 4398046511104.0;  // 2^42

// sin and cos of x (radians) in double, the same bits on every device: k = rint(x * 2/pi); r = x - k * pi/2 by
// three fma steps (pi/2 split into three doubles); Taylor polynomials of degree 17 (sin) and 18 (cos) in r on
// [-pi/4, pi/4], Horner in r^2 with fma; the quadrant k mod 4 swaps and negates. About 1 ulp from the true values.
STRATA_HD inline void sincos_d(double x, double* s, double* c) {
  if (!(x < kSincosLimit && x > -kSincosLimit)) {
    *s = *c = static_cast<double>(NAN);
    return;
  }
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const double k = rint(x * 0x1.45f306dc9c883p-1);
#else
  const double k = std::rint(x * 0x1.45f306dc9c883p-1);
#endif
  double r = fma_d(-k, 0x1.921fb54442d18p+0, x);
  r = fma_d(-k, 0x1.1a62633145c07p-54, r);
  r = fma_d(-k, -0x1.f1976b7ed8fbcp-110, r);
  const double z = r * r;
  double ps = 0x1.952c77030ad4ap-49;  // 1/17!
  ps = fma_d(ps, z, -0x1.ae7f3e733b81fp-41);
  ps = fma_d(ps, z, 0x1.6124613a86d09p-33);
  ps = fma_d(ps, z, -0x1.ae64567f544e4p-26);
  ps = fma_d(ps, z, 0x1.71de3a556c734p-19);
  ps = fma_d(ps, z, -0x1.a01a01a01a01ap-13);
  ps = fma_d(ps, z, 0x1.1111111111111p-7);
  ps = fma_d(ps, z, -0x1.5555555555555p-3);
  const double sr = fma_d(r * z, ps, r);
  double pc = 0x1.6827863b97d97p-53;  // 1/18!
  pc = fma_d(pc, z, -0x1.ae7f3e733b81fp-45);
  pc = fma_d(pc, z, 0x1.93974a8c07c9dp-37);
  pc = fma_d(pc, z, -0x1.1eed8eff8d898p-29);
  pc = fma_d(pc, z, 0x1.27e4fb7789f5cp-22);
  pc = fma_d(pc, z, -0x1.a01a01a01a01ap-16);
  pc = fma_d(pc, z, 0x1.6c16c16c16c17p-10);
  pc = fma_d(pc, z, -0x1.5555555555555p-5);
  pc = fma_d(pc, z, 0.5);
  const double cr = fma_d(-z, pc, 1.0);
  const auto quadrant = static_cast<int>(static_cast<int64_t>(k) & 3);
  switch (quadrant) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = -sr; break;
    case 2: *s = -sr; *c = -cr; break;
    default: *s = -cr; *c = sr; break;
  }
}

}  // namespace strata::format
