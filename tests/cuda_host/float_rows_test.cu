// The GPU's default float RMS_NORM and ROPE (rms_row.cuh, rope_pair.cuh; docs/CANONICAL_ARITHMETIC.md section 6),
// run as host code: the float sum of squares follows the 256-lane order on both kernel paths, and the float rope
// (float-float angle, rope_sincos_f) stays within a few float ulp of the double path at every position up to
// 262,144. The measured errors are printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "rms_row.cuh"
#include "rope_pair.cuh"

namespace {

using strata::gpu::kNormBlock;
using strata::gpu::kNormGroup;
using strata::gpu::kNormSlots;

// The short-row path as the kernel runs it: lane l's slots s (value l + 32 s) squared, the slots combined
// (m = 4, 2, 1), then the 32 lanes' xor butterfly; lane 0's value.
float group_path_sum(const std::vector<float>& x) {
  float lanes[kNormGroup];
  for (int l = 0; l < kNormGroup; ++l) {
    float acc[kNormSlots];
    for (int s = 0; s < kNormSlots; ++s) {
      const size_t i = static_cast<size_t>(l + s * kNormGroup);
      acc[s] = strata::gpu::norm_accumulate(0.0f, i < x.size() ? x[i] : 0.0f);
    }
    for (int m = kNormSlots / 2; m > 0; m /= 2) {
      for (int s = 0; s < m; ++s) acc[s] = acc[s] + acc[s + m];
    }
    lanes[l] = acc[0];
  }
  for (int m = kNormGroup / 2; m > 0; m /= 2) {
    float next[kNormGroup];
    for (int l = 0; l < kNormGroup; ++l) next[l] = lanes[l] + lanes[l ^ m];
    for (int l = 0; l < kNormGroup; ++l) lanes[l] = next[l];
  }
  return lanes[0];
}

// The long-row path: thread t's accumulator, the shared-memory tree m = 128 .. 32, then the group's butterfly.
float block_path_sum(const std::vector<float>& x) {
  float lanes[kNormBlock];
  for (int t = 0; t < kNormBlock; ++t) {
    float acc = 0.0f;
    for (size_t i = static_cast<size_t>(t); i < x.size(); i += kNormBlock) acc = strata::gpu::norm_accumulate(acc, x[i]);
    lanes[t] = acc;
  }
  for (int m = kNormBlock / 2; m >= kNormGroup; m /= 2) {
    for (int t = 0; t < m; ++t) lanes[t] = lanes[t] + lanes[t + m];
  }
  for (int m = kNormGroup / 2; m > 0; m /= 2) {
    float next[kNormGroup];
    for (int l = 0; l < kNormGroup; ++l) next[l] = lanes[l] + lanes[l ^ m];
    for (int l = 0; l < kNormGroup; ++l) lanes[l] = next[l];
  }
  return lanes[0];
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(FloatRows, NormSumFollowsThe256LaneOrderOnBothPaths) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int n : {1, 7, 32, 100, 255, 256, 257, 1000, 2048, 4099}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = nd(rng);
    const float serial = strata::gpu::norm_sum_squares_serial<float>(x.data(), n);
    EXPECT_EQ(bits(block_path_sum(x)), bits(serial)) << "n " << n;
    if (n <= kNormBlock) EXPECT_EQ(bits(group_path_sum(x)), bits(serial)) << "n " << n;
    // Float error only: the double sum of the same squares is within a few ulp.
    const double exact = strata::gpu::norm_sum_squares_serial<double>(x.data(), n);
    EXPECT_LE(std::fabs(serial - exact) / exact, 1e-6) << "n " << n;
  }
}

TEST(FloatRows, NormValuesWithinTwoUlpOfTheDoublePath) {
  std::mt19937 rng(6);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int n = 2048;
  std::vector<float> x(n), w(n);
  for (float& v : x) v = nd(rng);
  for (float& v : w) v = 1.0f + 0.1f * nd(rng);
  const float sf = strata::gpu::rms_scale(strata::gpu::norm_sum_squares_serial<float>(x.data(), n), n, 1e-6f);
  const double sd = strata::gpu::rms_scale(strata::gpu::norm_sum_squares_serial<double>(x.data(), n), n,
                                           static_cast<double>(1e-6f));
  double worst = 0.0;
  for (int i = 0; i < n; ++i) {
    const float f = strata::gpu::rms_value(x[i], sf, w.data(), i);
    const float d = strata::gpu::rms_value(x[i], sd, w.data(), i);
    const double ulp = std::ldexp(1.0, std::ilogb(std::fabs(d)) - 23);
    worst = std::max(worst, std::fabs(static_cast<double>(f) - d) / ulp);
  }
  std::printf("float RMS_NORM vs double: worst %.2f ulp over %d values\n", worst, n);
  EXPECT_LE(worst, 4.0);
}

// rope_sincos_f against sincos_d of the double path's angle, for every position up to 2^18 (a stride through them
// and the last ones), the table's frequencies of two bases and two frequency scales.
TEST(FloatRows, RopeAngleWithinAFewUlpAtEveryPosition) {
  double worst_sc = 0.0, worst_rot = 0.0;
  int32_t worst_pos = 0;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float base : {10000.0f, 1000000.0f}) {
    for (float fscale : {1.0f, 0.25f}) {
      const int n_rot = 128;
      strata::gpu::RopeFreqs t{};
      strata::gpu::rope_fill_freqs(t, base, n_rot, false);
      strata::gpu::RopeFreqs td{};
      strata::gpu::rope_fill_freqs(td, base, n_rot, true);
      for (int k : {0, 1, 2, 5, 17, 40, 63}) {
        for (int32_t pos = 0; pos <= 262144; pos += (pos < 4096 ? 1 : pos > 262144 - 4096 ? 1 : 97)) {
          float s, c;
          strata::gpu::rope_sincos_f(pos, fscale, t.f.hi[k], t.f.lo[k], s, c);
          double sd, cd;
          strata::format::sincos_d(static_cast<double>(pos) * static_cast<double>(fscale) * td.d[k], &sd, &cd);
          const double e = std::max(std::fabs(s - sd), std::fabs(c - cd)) / 0x1p-24;  // in ulps of [0.5, 1)
          if (e > worst_sc) {
            worst_sc = e;
            worst_pos = pos;
          }
          if (pos % 389 == 0) {
            const float a = nd(rng), b = nd(rng);
            float ya, yb, za, zb;
            strata::gpu::rope_rotate_f(a, b, s, c, ya, yb);
            strata::gpu::rope_rotate(a, b, static_cast<double>(pos), static_cast<double>(fscale), td.d[k], za, zb);
            const double mag = std::max(std::fabs(a), std::fabs(b));
            const double ulp = std::ldexp(1.0, std::ilogb(mag) - 23);
            worst_rot = std::max(worst_rot, std::max(std::fabs(ya - za), std::fabs(yb - zb)) / ulp);
          }
        }
      }
    }
  }
  std::printf("float ROPE vs double: sin/cos worst %.2f ulp(2^-24) at position %d; rotated pair worst %.2f ulp of "
              "max(|a|, |b|)\n", worst_sc, worst_pos, worst_rot);
  EXPECT_LE(worst_sc, 4.0);
  EXPECT_LE(worst_rot, 4.0);
}

// The float rope's every operation is IEEE binary32: the host pass and a second evaluation agree bit for bit, and
// a position's result does not depend on its neighbours (it is a function of (pos, scale, hi, lo) alone).
TEST(FloatRows, RopeAngleIsAFunctionOfItsInputsAlone) {
  float s1, c1, s2, c2;
  strata::gpu::rope_sincos_f(262143, 1.0f, 1.0f, 0.0f, s1, c1);
  strata::gpu::rope_sincos_f(5, 1.0f, 0.5f, 0.0f, s2, c2);
  strata::gpu::rope_sincos_f(262143, 1.0f, 1.0f, 0.0f, s2, c2);
  EXPECT_EQ(bits(s1), bits(s2));
  EXPECT_EQ(bits(c1), bits(c2));
}

}  // namespace
