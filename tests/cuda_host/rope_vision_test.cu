// ROPE mode 24, 2-D vision RoPE (backend 1.7, Qwen3-VL's projector), on the plugin's code path (rope_pair.cuh),
// run on the host: the component each pair takes (vision_component), the table of each section's frequencies
// (rope_fill_vision_freqs), and whole heads rotated as op_rope.cu's kernel does (neox pairs, pair k at the row or
// column component): the double path equals the reference's arithmetic (core/src/reference/op_rope.cpp) bit for bit,
// the float path stays within a few ulp of it. Values past n_rot are copied.
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

TEST(CudaRopeVision, ComponentOfEachPair) {
  // Qwen3-VL's projector: head_dim 72, 36 pairs, 18 rows then 18 columns.
  for (int k = 0; k < 36; ++k) EXPECT_EQ(strata::gpu::vision_component(k, 18), k < 18 ? 1 : 2) << k;
  for (int k = 0; k < 10; ++k) EXPECT_EQ(strata::gpu::vision_component(k, 0), 2);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(strata::gpu::vision_component(k, 10), 1);
}

TEST(CudaRopeVision, FrequenciesPerSection) {
  const int n_rot = 72, rows = 18;
  strata::gpu::RopeFreqs d{}, f{};
  strata::gpu::rope_fill_vision_freqs(d, 10000.0f, rows, n_rot, true);
  strata::gpu::rope_fill_vision_freqs(f, 10000.0f, rows, n_rot, false);
  for (int k = 0; k < n_rot / 2; ++k) {
    const int index = k < rows ? k : k - rows;
    const double want = std::pow(10000.0, -2.0 * index / (n_rot / 2));
    EXPECT_EQ(d.d[k], strata::format::rope_inv_freq(10000.0, index, n_rot / 2)) << k;
    EXPECT_NEAR(d.d[k], want, 1e-15 * want) << k;
    EXPECT_EQ(f.f.hi[k], static_cast<float>(d.d[k])) << k;
    EXPECT_NEAR(static_cast<double>(f.f.hi[k]) + static_cast<double>(f.f.lo[k]), d.d[k], std::ldexp(d.d[k], -46)) << k;
  }
  EXPECT_EQ(d.d[0], 1.0);
  EXPECT_EQ(d.d[rows], 1.0);  // the column section starts again from index 0
}

// The reference's mode-24 head: pair k < rows at the row component with index k, the others at the column
// component with index k - rows; theta = pos * pow(base, -2 index / (n_rot / 2)), sincos_d, rotation in double.
std::vector<float> reference_head(const std::vector<float>& x, int n_rot, int rows, double base, double row_pos,
                                  double col_pos) {
  std::vector<float> y = x;
  const int half = n_rot / 2;
  for (int k = 0; k < half; ++k) {
    const bool row_pair = k < rows;
    const double theta = (row_pair ? row_pos : col_pos) * strata::format::rope_inv_freq(base, row_pair ? k : k - rows, half);
    double s = 0.0, c = 0.0;
    strata::format::sincos_d(theta, &s, &c);
    const double a = x[static_cast<size_t>(k)], b = x[static_cast<size_t>(k + half)];
    y[static_cast<size_t>(k)] = static_cast<float>(a * c - b * s);
    y[static_cast<size_t>(k + half)] = static_cast<float>(a * s + b * c);
  }
  return y;
}

// op_rope.cu's rope_block for one head of token t in mode 24: scale and mscale 1, positions from src1 [n_tok, 4].
std::vector<float> plugin_head(const std::vector<float>& x, int n_rot, int rows, float base, const int32_t* pos,
                               int64_t t, int64_t comp_stride, bool f64) {
  strata::gpu::RopeFreqs freq{};
  strata::gpu::rope_fill_vision_freqs(freq, base, rows, n_rot, f64);
  std::vector<float> y = x;
  for (int k = 0; k < n_rot / 2; ++k) {
    int ia, ib;
    strata::gpu::rope_pair_index(k, n_rot, /*neox=*/true, ia, ib);
    const int32_t p = strata::gpu::imrope_position(pos, t, comp_stride, strata::gpu::vision_component(k, rows));
    const auto sa = static_cast<size_t>(ia), sb = static_cast<size_t>(ib);
    if (f64) {
      strata::gpu::rope_rotate(x[sa], x[sb], static_cast<double>(p), 1.0, freq.d[k], y[sa], y[sb], 1.0);
    } else {
      float s, c;
      strata::gpu::rope_sincos_f(p, 1.0f, freq.f.hi[k], freq.f.lo[k], s, c);
      strata::gpu::rope_mscale_f(1.0f, s, c);
      strata::gpu::rope_rotate_f(x[sa], x[sb], s, c, y[sa], y[sb]);
    }
  }
  return y;  // values from n_rot on: copied
}

TEST(CudaRopeVision, HeadsAsTheReference) {
  std::mt19937 rng(24);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  struct Shape {
    int head_dim, n_rot, rows;
  };
  double worst = 0.0;
  for (const Shape sh : {Shape{72, 72, 18}, Shape{64, 64, 16}, Shape{80, 64, 20}, Shape{16, 16, 0}, Shape{16, 16, 8}}) {
    const int n_tok = 40;
    std::vector<int32_t> pos(static_cast<size_t>(4 * n_tok));
    for (int t = 0; t < n_tok; ++t) {
      pos[static_cast<size_t>(t)] = 1000 + t;                                 // t: ignored
      pos[static_cast<size_t>(n_tok + t)] = t < 30 ? t / 6 : 5000 + 97 * t;   // row
      pos[static_cast<size_t>(2 * n_tok + t)] = t < 30 ? t % 6 : 70000 - t;   // column
      pos[static_cast<size_t>(3 * n_tok + t)] = -5;                           // e: ignored
    }
    for (int t = 0; t < n_tok; ++t) {
      std::vector<float> x(static_cast<size_t>(sh.head_dim));
      for (float& v : x) v = normal(rng);
      const std::vector<float> want =
          reference_head(x, sh.n_rot, sh.rows, 10000.0, pos[static_cast<size_t>(n_tok + t)], pos[static_cast<size_t>(2 * n_tok + t)]);
      const std::vector<float> d = plugin_head(x, sh.n_rot, sh.rows, 10000.0f, pos.data(), t, n_tok, true);
      for (int i = 0; i < sh.head_dim; ++i) {
        ASSERT_EQ(strata::format::f32_bits(d[static_cast<size_t>(i)]), strata::format::f32_bits(want[static_cast<size_t>(i)]))
            << "head_dim " << sh.head_dim << " token " << t << " value " << i;
      }
      const std::vector<float> fl = plugin_head(x, sh.n_rot, sh.rows, 10000.0f, pos.data(), t, n_tok, false);
      const int half = sh.n_rot / 2;
      for (int k = 0; k < half; ++k) {
        const double mag = std::max(std::fabs(x[static_cast<size_t>(k)]), std::fabs(x[static_cast<size_t>(k + half)]));
        const double ulp = std::ldexp(1.0, std::ilogb(mag) - 23);
        for (int i : {k, k + half}) {
          worst = std::max(worst, std::fabs(static_cast<double>(fl[static_cast<size_t>(i)]) - want[static_cast<size_t>(i)]) / ulp);
        }
      }
      for (int i = sh.n_rot; i < sh.head_dim; ++i) EXPECT_EQ(fl[static_cast<size_t>(i)], x[static_cast<size_t>(i)]);
    }
  }
  std::printf("ROPE mode 24 float path: worst %.2f ulp of the pair's magnitude\n", worst);
  EXPECT_LT(worst, 8.0);
}

}  // namespace
