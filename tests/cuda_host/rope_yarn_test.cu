// ROPE's YaRN (backend 1.6) on the plugin's code path (rope_pair.cuh), run on the host: the op's floats give the
// frequency table, the position scale and the cos/sin factor of format::RopeAngles; without YaRN the table and the
// rotation keep their bits; the double path equals the reference's arithmetic (core/src/reference/op_rope.cpp) bit
// for bit; the float path stays within a few ulp of it with YaRN on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

#include "rope_pair.cuh"
#include "strata/format/canonical_double.hpp"
#include "strata/format/fp16.hpp"

namespace {

using strata::format::f32_bits;

// gpt-oss's YaRN: base 150000, factor 32 (freq_scale 1/32), ext_factor 1, attn_factor 1.3466, range [8, 18) for
// n_rot 64, as llama.cpp's hparams give them (the host floors and ceils the range).
constexpr float kYarn[6] = {150000.0f, 0.03125f, 1.0f, 1.3465736f, 8.0f, 18.0f};

// The reference's pair rotation with RopeAngles (op_rope.cpp), in double, rounded to float once.
void reference_pair(const float* f, int k, int n_rot, int32_t pos, float a, float b, float& ya, float& yb) {
  const strata::format::RopeAngles angles(f);
  const double theta = static_cast<double>(pos) * angles.pos_scale * angles.freq(static_cast<double>(f[0]), k, n_rot);
  double s = 0.0, c = 0.0;
  strata::format::sincos_d(theta, &s, &c);
  s = s * angles.mscale;
  c = c * angles.mscale;
  const double va = static_cast<double>(a), vb = static_cast<double>(b);
  ya = static_cast<float>(va * c - vb * s);
  yb = static_cast<float>(va * s + vb * c);
}

TEST(CudaRopeYarn, WithoutYarnTheTableAndScalesAreTodays) {
  const int n_rot = 128;
  // f[2] = 0: the range floats and f[3] = 0 change nothing.
  const float f[6] = {10000.0f, 0.25f, 0.0f, 0.0f, 3.0f, 40.0f};
  for (bool f64 : {false, true}) {
    strata::gpu::RopeFreqs plain{}, from_op{};
    strata::gpu::rope_fill_freqs(plain, f[0], n_rot, f64);
    strata::gpu::rope_fill_freqs(from_op, f, n_rot, f64);
    for (int k = 0; k < n_rot / 2; ++k) {
      if (f64) {
        EXPECT_EQ(plain.d[k], from_op.d[k]) << k;
        EXPECT_EQ(plain.d[k], strata::format::rope_inv_freq(10000.0, k, n_rot)) << k;
      } else {
        EXPECT_EQ(f32_bits(plain.f.hi[k]), f32_bits(from_op.f.hi[k])) << k;
        EXPECT_EQ(f32_bits(plain.f.lo[k]), f32_bits(from_op.f.lo[k])) << k;
      }
    }
  }
  const strata::gpu::RopeScaling sc = strata::gpu::rope_scaling(f);
  EXPECT_EQ(sc.pos_scale, 0.25f);
  EXPECT_EQ(sc.mscale, 1.0f);
  // mscale 1 leaves the rotation's bits: the default argument and an explicit 1.
  float ya, yb, za, zb;
  strata::gpu::rope_rotate(0.3f, -1.7f, 1234.0, 0.25, strata::format::rope_inv_freq(10000.0, 5, n_rot), ya, yb);
  strata::gpu::rope_rotate(0.3f, -1.7f, 1234.0, 0.25, strata::format::rope_inv_freq(10000.0, 5, n_rot), za, zb, 1.0);
  EXPECT_EQ(f32_bits(ya), f32_bits(za));
  EXPECT_EQ(f32_bits(yb), f32_bits(zb));
  float s = 0.6f, c = -0.8f;
  strata::gpu::rope_mscale_f(sc.mscale, s, c);
  EXPECT_EQ(f32_bits(s), f32_bits(0.6f));
  EXPECT_EQ(f32_bits(c), f32_bits(-0.8f));
}

TEST(CudaRopeYarn, DoublePathIsTheReferencesBits) {
  const int n_rot = 64;
  strata::gpu::RopeFreqs td{};
  strata::gpu::rope_fill_freqs(td, kYarn, n_rot, true);
  const strata::gpu::RopeScaling sc = strata::gpu::rope_scaling(kYarn);
  EXPECT_EQ(sc.pos_scale, 1.0f);  // YaRN scales the frequencies, not the position
  EXPECT_EQ(sc.mscale, kYarn[3]);
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (int k = 0; k < n_rot / 2; ++k) {
    const strata::format::RopeAngles angles(kYarn);
    EXPECT_EQ(td.d[k], angles.freq(static_cast<double>(kYarn[0]), k, n_rot)) << k;
    for (int32_t pos : {0, 1, 7, 100, 4095, 131071}) {
      const float a = nd(rng), b = nd(rng);
      float ya, yb, wa, wb;
      strata::gpu::rope_rotate(a, b, static_cast<double>(pos), static_cast<double>(sc.pos_scale), td.d[k], ya, yb,
                               static_cast<double>(sc.mscale));
      reference_pair(kYarn, k, n_rot, pos, a, b, wa, wb);
      ASSERT_EQ(f32_bits(ya), f32_bits(wa)) << "pair " << k << " pos " << pos;
      ASSERT_EQ(f32_bits(yb), f32_bits(wb)) << "pair " << k << " pos " << pos;
    }
  }
}

TEST(CudaRopeYarn, FloatPathWithinAFewUlpOfTheReference) {
  const int n_rot = 64;
  strata::gpu::RopeFreqs t{};
  strata::gpu::rope_fill_freqs(t, kYarn, n_rot, false);
  const strata::gpu::RopeScaling sc = strata::gpu::rope_scaling(kYarn);
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  double worst = 0.0;
  for (int k = 0; k < n_rot / 2; ++k) {
    for (int32_t pos = 0; pos <= 131072; pos += pos < 1024 ? 1 : 61) {
      float s, c;
      strata::gpu::rope_sincos_f(pos, sc.pos_scale, t.f.hi[k], t.f.lo[k], s, c);
      strata::gpu::rope_mscale_f(sc.mscale, s, c);
      const float a = nd(rng), b = nd(rng);
      float ya, yb, wa, wb;
      strata::gpu::rope_rotate_f(a, b, s, c, ya, yb);
      reference_pair(kYarn, k, n_rot, pos, a, b, wa, wb);
      // ulps of max(|a|, |b|) * mscale, the size of the rotated pair
      const double mag = std::max(std::fabs(a), std::fabs(b)) * static_cast<double>(sc.mscale);
      const double ulp = std::ldexp(1.0, std::ilogb(mag) - 23);
      worst = std::max(worst, std::max(std::fabs(ya - wa), std::fabs(yb - wb)) / ulp);
    }
  }
  std::printf("float ROPE with YaRN vs the reference: worst %.2f ulp of the pair's size\n", worst);
  EXPECT_LE(worst, 6.0);
}

}  // namespace
