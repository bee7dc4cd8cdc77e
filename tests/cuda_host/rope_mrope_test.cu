// ROPE mode 40, interleaved M-RoPE (backend 1.6, Qwen3-VL), on the plugin's code path (rope_pair.cuh), run on the
// host: the component each pair takes (imrope_component) as plugin_api.h and the reference (core/src/reference/
// op_rope.cpp) define it, the position lookup of src1 [n_tok, 4] (component-major) and [n_tok] (text: (p, p, p, 0)),
// and whole heads rotated as op_rope.cu's kernel does (neox pairs, each pair at its component's position): the
// double path equals the reference's arithmetic bit for bit, the float path stays within a few ulp of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "rope_pair.cuh"
#include "strata/format/canonical_double.hpp"
#include "strata/format/fp16.hpp"

namespace {

using strata::gpu::imrope_component;
using strata::gpu::imrope_position;
using strata::gpu::RopeSections;

RopeSections sections(int s0, int s1, int s2, int s3) { return RopeSections{{s0, s1, s2, s3}, s0 + s1 + s2 + s3}; }

// plugin_api.h's words: pair k (modulo the sections' sum) takes row when k % 3 == 1 && k < 3 s1, column when
// k % 3 == 2 && k < 3 s2, t when k % 3 == 0 && k < 3 s0, else e; 0 t, 1 row, 2 column, 3 e.
int spec_component(int k, const int (&s)[4]) {
  const int sum = s[0] + s[1] + s[2] + s[3];
  const int x = k % sum;
  if (x % 3 == 1 && x < 3 * s[1]) return 1;
  if (x % 3 == 2 && x < 3 * s[2]) return 2;
  if (x % 3 == 0 && x < 3 * s[0]) return 0;
  return 3;
}

TEST(CudaRopeMrope, ComponentOfEachPair) {
  // Qwen3-VL's sections (24, 20, 20, 0), 64 pairs: t, row, column interleaved while all three have room.
  const RopeSections q = sections(24, 20, 20, 0);
  const int want_first[9] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  for (int k = 0; k < 9; ++k) EXPECT_EQ(imrope_component(k, q), want_first[k]) << k;
  EXPECT_EQ(imrope_component(57, q), 0);  // 57 < 72: t
  EXPECT_EQ(imrope_component(58, q), 1);  // 58 < 60: row
  EXPECT_EQ(imrope_component(59, q), 2);  // 59 < 60: column
  EXPECT_EQ(imrope_component(60, q), 0);  // t's section reaches 72
  EXPECT_EQ(imrope_component(61, q), 3);  // row's ends at 60: e
  EXPECT_EQ(imrope_component(62, q), 3);
  EXPECT_EQ(imrope_component(63, q), 0);
  // Every pair of many section sets, against the words (pairs past the sum wrap).
  const int sets[][4] = {{24, 20, 20, 0}, {3, 2, 1, 2}, {0, 0, 0, 5}, {5, 0, 0, 0}, {0, 4, 0, 0}, {1, 1, 1, 1}, {16, 24, 24, 0}, {2, 7, 3, 1}};
  for (const auto& s : sets) {
    const RopeSections sec = sections(s[0], s[1], s[2], s[3]);
    for (int k = 0; k < 200; ++k) EXPECT_EQ(imrope_component(k, sec), spec_component(k, s)) << s[0] << s[1] << s[2] << s[3] << " pair " << k;
  }
}

TEST(CudaRopeMrope, PositionsComponentMajorOrText) {
  // [n_tok = 3, 4]: component c of token t at t + 3 c.
  const int32_t four[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
  for (int t = 0; t < 3; ++t) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(imrope_position(four, t, 3, c), 10 * (c + 1) + t);
  }
  const int32_t text[3] = {7, 8, 9};
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(imrope_position(text, t, 0, 0), text[t]);
    EXPECT_EQ(imrope_position(text, t, 0, 1), text[t]);
    EXPECT_EQ(imrope_position(text, t, 0, 2), text[t]);
    EXPECT_EQ(imrope_position(text, t, 0, 3), 0);
  }
}

// The reference's mode-40 head (op_rope.cpp): neox pairs, pair k at comp[imrope_component(k % sum)], in double.
std::vector<float> reference_head(const std::vector<float>& x, int n_rot, const float* f, const double (&comp)[4],
                                  const int (&s)[4]) {
  const strata::format::RopeAngles angles(f);
  std::vector<float> row = x;
  const int half = n_rot / 2;
  for (int k = 0; k < half; ++k) {
    const double p = comp[spec_component(k, s)];
    const double theta = p * angles.pos_scale * angles.freq(static_cast<double>(f[0]), k, n_rot);
    double sn = 0.0, cs = 0.0;
    strata::format::sincos_d(theta, &sn, &cs);
    sn = sn * angles.mscale;
    cs = cs * angles.mscale;
    const double a = x[static_cast<size_t>(k)], b = x[static_cast<size_t>(k + half)];
    row[static_cast<size_t>(k)] = static_cast<float>(a * cs - b * sn);
    row[static_cast<size_t>(k + half)] = static_cast<float>(a * sn + b * cs);
  }
  return row;
}

// op_rope.cu's rope_block for one head: pair k's position from its component, then the double or float rotation.
std::vector<float> plugin_head(const std::vector<float>& x, int n_rot, const float* f, const int32_t* pos, int64_t t,
                               int64_t comp_stride, const RopeSections& sec, bool f64) {
  strata::gpu::RopeFreqs freq{};
  strata::gpu::rope_fill_freqs(freq, f, n_rot, f64);
  const strata::gpu::RopeScaling sc = strata::gpu::rope_scaling(f);
  std::vector<float> y = x;
  for (int k = 0; k < n_rot / 2; ++k) {
    int ia, ib;
    strata::gpu::rope_pair_index(k, n_rot, /*neox=*/true, ia, ib);
    const int32_t p = imrope_position(pos, t, comp_stride, imrope_component(k, sec));
    if (f64) {
      strata::gpu::rope_rotate(x[static_cast<size_t>(ia)], x[static_cast<size_t>(ib)], static_cast<double>(p), static_cast<double>(sc.pos_scale),
                               freq.d[k], y[static_cast<size_t>(ia)], y[static_cast<size_t>(ib)], static_cast<double>(sc.mscale));
    } else {
      float s, c;
      strata::gpu::rope_sincos_f(p, sc.pos_scale, freq.f.hi[k], freq.f.lo[k], s, c);
      strata::gpu::rope_mscale_f(sc.mscale, s, c);
      strata::gpu::rope_rotate_f(x[static_cast<size_t>(ia)], x[static_cast<size_t>(ib)], s, c, y[static_cast<size_t>(ia)], y[static_cast<size_t>(ib)]);
    }
  }
  return y;
}

TEST(CudaRopeMrope, HeadsAsTheReference) {
  std::mt19937 rng(40);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int head_dim = 128, n_rot = 128, n_tok = 5;
  const int s[4] = {24, 20, 20, 0};
  const RopeSections sec = sections(24, 20, 20, 0);
  const float f[6] = {5000000.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};  // Qwen3-VL's base, no YaRN
  std::vector<int32_t> four(static_cast<size_t>(4 * n_tok));
  for (int t = 0; t < n_tok; ++t) {
    four[static_cast<size_t>(t)] = 100 + t;               // t
    four[static_cast<size_t>(n_tok + t)] = 3 + t / 2;      // row
    four[static_cast<size_t>(2 * n_tok + t)] = 7 - t;      // column
    four[static_cast<size_t>(3 * n_tok + t)] = 2 * t;      // e
  }
  std::vector<int32_t> text = {0, 1, 17, 4096, 70000};
  double worst = 0.0;
  for (int t = 0; t < n_tok; ++t) {
    std::vector<float> x(static_cast<size_t>(head_dim));
    for (float& v : x) v = normal(rng);
    for (int form = 0; form < 2; ++form) {
      const int32_t* pos = form == 0 ? four.data() : text.data();
      const int64_t stride = form == 0 ? n_tok : 0;
      double comp[4];
      for (int c = 0; c < 4; ++c) comp[c] = form == 0 ? four[static_cast<size_t>(t + c * n_tok)] : c == 3 ? 0 : text[static_cast<size_t>(t)];
      const std::vector<float> want = reference_head(x, n_rot, f, comp, s);
      const std::vector<float> d = plugin_head(x, n_rot, f, pos, t, stride, sec, true);
      for (int i = 0; i < head_dim; ++i) {
        ASSERT_EQ(strata::format::f32_bits(d[static_cast<size_t>(i)]), strata::format::f32_bits(want[static_cast<size_t>(i)]))
            << "form " << form << " token " << t << " value " << i;
      }
      const std::vector<float> fl = plugin_head(x, n_rot, f, pos, t, stride, sec, false);
      for (int k = 0; k < n_rot / 2; ++k) {
        const double mag = std::max(std::fabs(x[static_cast<size_t>(k)]), std::fabs(x[static_cast<size_t>(k + n_rot / 2)]));
        const double ulp = std::ldexp(1.0, std::ilogb(mag) - 23);
        for (int i : {k, k + n_rot / 2}) {
          worst = std::max(worst, std::fabs(static_cast<double>(fl[static_cast<size_t>(i)]) - want[static_cast<size_t>(i)]) / ulp);
        }
      }
    }
  }
  EXPECT_LT(worst, 8.0);
}

}  // namespace
