// LAYER_NORM and GELU (backend 1.7) on the plugin's code path (layer_norm_row.cuh, gelu.cuh, float_pair.cuh), run
// on the host and compared with the reference's definitions (core/src/reference/op_layer_norm.cpp, op_gelu.cpp):
// GELU's f16 table form reads the reference's own table (format::gelu_f16_table) at the same index, with the same
// clamps, for every half in (-10.5, 10.5), the floats around each and the midpoints between neighbours (the input
// rounding's ties); the float tanh form stays within a few ulp where its values are not vanishing; LAYER_NORM's
// float row (the kernel's thread order and tree, emulated) stays within 3e-7 of each term of the reference, and the
// `_f64ref` row gives the reference's bits. The measured errors are printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "float_pair.cuh"
#include "gelu.cuh"
#include "layer_norm_row.cuh"
#include "strata/format/fp16.hpp"
#include "strata/format/gelu_table.hpp"

namespace {

using strata::gpu::FloatPair;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// ---- the reference's definitions (op_gelu.cpp, op_layer_norm.cpp), restated ----

double ref_gelu_d(double x) {
  const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
  return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x)));
}

float ref_gelu_table(float v) {
  if (v <= -10.0f) return 0.0f;
  if (v < 10.0f) return strata::format::gelu_f16_table()[strata::format::fp32_to_fp16(v)];
  return v;
}

std::vector<float> ref_layer_norm(const std::vector<float>& row, float eps, const float* w, const float* b) {
  const auto n = static_cast<int64_t>(row.size());
  double sum = 0.0;
  for (float v : row) sum += static_cast<double>(v);
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
  for (float v : row) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
  const double scale = 1.0 / std::sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
  std::vector<float> out(row.size());
  for (size_t k = 0; k < row.size(); ++k) {
    double y = (static_cast<double>(row[k]) - mean) * scale;
    if (w != nullptr) y = y * static_cast<double>(w[k]);
    if (b != nullptr) y = y + static_cast<double>(b[k]);
    out[k] = static_cast<float>(y);
  }
  return out;
}

// ---- GELU ----

TEST(CudaGelu, F16TableOpAroundEveryHalf) {
  // The whole op on x: each half in (-10, 10), the floats next to it, and the midpoints between neighbours (ties of
  // the input rounding); then the clamps and specials.
  std::vector<float> xs;
  for (uint32_t hb = 0; hb < 0x10000u; ++hb) {
    const float h = strata::format::fp16_to_fp32(static_cast<uint16_t>(hb));
    if (!(h > -10.5f && h < 10.5f)) continue;
    xs.push_back(h);
    xs.push_back(std::nextafter(h, 20.0f));
    xs.push_back(std::nextafter(h, -20.0f));
    if ((hb & 0x7fffu) < 0x7bffu) {
      const float next = strata::format::fp16_to_fp32(static_cast<uint16_t>(hb + 1));
      xs.push_back(0.5f * (h + next));  // exact in float
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), std::nextafter(-10.0f, -20.0f),
                  std::nextafter(10.0f, 20.0f), -12.0f, 12.0f, 1e30f, -1e30f, inf, -inf, 2.9802322e-8f, -2.9802322e-8f,
                  3e-8f, 1e-30f, -1e-30f, std::numeric_limits<float>::quiet_NaN()}) {
    xs.push_back(v);
  }
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  for (int i = 0; i < 100000; ++i) xs.push_back(u(rng));
  const float* table = strata::format::gelu_f16_table();
  for (float x : xs) ASSERT_EQ(bits(strata::gpu::gelu_f16_table(x, table)), bits(ref_gelu_table(x))) << "x = " << x;
  EXPECT_EQ(bits(strata::gpu::gelu_f16_table(-12.0f, table)), bits(0.0f));  // +0 below the clamp
  EXPECT_EQ(bits(strata::gpu::gelu_f16_table(-0.0f, table)), bits(table[0x8000]));
  EXPECT_EQ(bits(strata::gpu::gelu_f16_table(12.0f, table)), bits(12.0f));
  std::printf("GELU f16 table op: %zu inputs equal\n", xs.size());
}

TEST(CudaGelu, TanhFormInFloat) {
  // Error in float ulp of the reference's value over [-12, 12]: a few ulp where |u| is small, growing like |u| for
  // negative x, where the values are tiny. There the reference's own 1 + tanh(u) cancels in double (exactly 0 below
  // x = -5.6), so what it leaves, 2^-53 |x|, is allowed too.
  double worst_pos = 0.0, worst_neg = 0.0;
  for (int i = -1200000; i <= 1200000; ++i) {
    const float x = static_cast<float>(i) * 1e-5f;
    const double want = static_cast<double>(static_cast<float>(ref_gelu_d(static_cast<double>(x))));
    const float got = strata::gpu::gelu_tanh_f(x);
    ASSERT_EQ(std::signbit(got), std::signbit(want)) << x;
    const double ulp = std::max(std::ldexp(1.0, std::ilogb(std::max(std::fabs(want), 1e-38)) - 23), std::ldexp(1.0, -149));
    const double err = std::max(0.0, std::fabs(static_cast<double>(got) - want) - std::ldexp(std::fabs(x), -53)) / ulp;
    if (x >= -1.0f) {
      worst_pos = std::max(worst_pos, err);
    } else {
      const double u = 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
      worst_neg = std::max(worst_neg, err / (1.0 + std::fabs(u)));
    }
  }
  std::printf("GELU tanh form in float: worst %.2f ulp for x >= -1, %.2f ulp per unit of 1 + |u| below\n", worst_pos,
              worst_neg);
  EXPECT_LE(worst_pos, 4.0);
  EXPECT_LE(worst_neg, 6.0);  // u's three roundings grow by 2|u| through exp
  // Specials: the reference's values (and NaN where its 0.5 x (1 + tanh u) is -inf * 0).
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(strata::gpu::gelu_tanh_f(inf), inf);
  EXPECT_TRUE(std::isnan(strata::gpu::gelu_tanh_f(-inf)));
  EXPECT_TRUE(std::isnan(strata::gpu::gelu_tanh_f(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(bits(strata::gpu::gelu_tanh_f(-0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(strata::gpu::gelu_tanh_f(0.0f)), bits(0.0f));
  EXPECT_EQ(strata::gpu::gelu_tanh_f(1e30f), 1e30f);
  EXPECT_EQ(bits(strata::gpu::gelu_tanh_f(-1e30f)), bits(-0.0f));
  EXPECT_EQ(bits(strata::gpu::gelu_tanh_f(-1e30f)), bits(static_cast<float>(ref_gelu_d(-1e30))));
}

TEST(CudaGelu, DoubleFormIsTheReferenceExpression) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = nd(rng);
    ASSERT_EQ(bits(strata::gpu::gelu_tanh_f64ref(x)), bits(static_cast<float>(ref_gelu_d(static_cast<double>(x))))) << x;
  }
}

// ---- LAYER_NORM ----

// The float kernel's row, one thread: the thread order and tree of layer_norm_rows.
std::vector<float> plugin_row(const std::vector<float>& x, float eps, const float* w, const float* b) {
  const auto n = static_cast<int64_t>(x.size());
  const FloatPair sum = strata::gpu::ln_sum_serial(x.data(), n, strata::gpu::ln_add);
  const FloatPair mean = strata::gpu::ln_mean(sum, n);
  const FloatPair sq = strata::gpu::ln_sum_serial(x.data(), n, [&](FloatPair acc, float v) {
    return strata::gpu::ln_add_square(acc, strata::gpu::ln_deviation(v, mean));
  });
  const float scale = strata::gpu::ln_scale(sq, n, eps);
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    y[static_cast<size_t>(i)] = strata::gpu::ln_value(strata::gpu::ln_deviation(x[static_cast<size_t>(i)], mean), scale, w, b, i);
  }
  return y;
}

// The _f64ref kernel's row.
std::vector<float> plugin_row_f64(const std::vector<float>& x, float eps, const float* w, const float* b) {
  const auto n = static_cast<int64_t>(x.size());
  double mean = 0.0, scale = 0.0;
  strata::gpu::ln_stats_f64ref(x.data(), n, eps, &mean, &scale);
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    y[static_cast<size_t>(i)] = strata::gpu::ln_value_f64ref(x[static_cast<size_t>(i)], mean, scale, w, b, i);
  }
  return y;
}

// Within 3e-7 of each value's terms (|normalized * w| + |b|), and of what the float-float mean can hold: 2^-45 |mean|
// (times scale and |w|) for values near the mean of rows far from 0.
TEST(CudaLayerNorm, RowsAsTheReference) {
  std::mt19937 rng(18);
  const float eps = 1e-6f;
  double worst = 0.0;
  int rows = 0;
  for (int64_t n : {1, 2, 37, 255, 256, 257, 1152, 4304, 4608}) {
    for (float offset : {0.0f, 4.0f, -1000.0f, 30000.0f}) {
      for (float sigma : {1e-3f, 1.0f, 100.0f}) {
        std::normal_distribution<float> nd(offset, sigma);
        std::normal_distribution<float> unit(0.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(n)), w(static_cast<size_t>(n)), b(static_cast<size_t>(n));
        for (float& v : x) v = nd(rng);
        for (float& v : w) v = unit(rng);
        for (float& v : b) v = 0.5f * unit(rng);
        for (int form = 0; form < 4; ++form) {
          const float* wp = (form & 1) != 0 ? w.data() : nullptr;
          const float* bp = (form & 2) != 0 ? b.data() : nullptr;
          const std::vector<float> want = ref_layer_norm(x, eps, wp, bp);
          const std::vector<float> got = plugin_row(x, eps, wp, bp);
          const std::vector<float> f64 = plugin_row_f64(x, eps, wp, bp);
          // The scale of each value's terms: |normalized * w| + |b| from the reference's own statistics.
          const std::vector<float> plain = ref_layer_norm(x, eps, nullptr, nullptr);
          double mean = 0.0, sq = 0.0;
          for (float v : x) mean += static_cast<double>(v);
          mean /= static_cast<double>(n);
          for (float v : x) sq += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean);
          const double scale = 1.0 / std::sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
          for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_EQ(bits(f64[i]), bits(want[i])) << "f64ref n " << n << " value " << i;
            const double term = std::fabs(static_cast<double>(plain[i]) * (wp != nullptr ? w[i] : 1.0f)) +
                                (bp != nullptr ? std::fabs(static_cast<double>(b[i])) : 0.0);
            const double held = std::ldexp(std::fabs(mean), -45) * scale * (wp != nullptr ? std::fabs(w[i]) : 1.0);
            const double err = std::max(0.0, std::fabs(static_cast<double>(got[i]) - want[i]) - held) / std::max(term, 1e-30);
            worst = std::max(worst, err);
            ASSERT_LE(err, 3e-7) << "n " << n << " offset " << offset << " sigma " << sigma << " form " << form
                                 << " value " << i << ": " << got[i] << " vs " << want[i];
          }
          ++rows;
        }
      }
    }
  }
  std::printf("LAYER_NORM float rows: %d rows, worst error %.3g of the value's terms\n", rows, worst);
}

TEST(CudaLayerNorm, SpecialsAndConstantRows) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float special : {inf, -inf, nan}) {
    std::vector<float> x(300, 1.5f);
    for (size_t i = 0; i < x.size(); ++i) x[i] += static_cast<float>(i % 7);
    x[123] = special;
    const std::vector<float> got = plugin_row(x, 1e-6f, nullptr, nullptr);
    const std::vector<float> want = ref_layer_norm(x, 1e-6f, nullptr, nullptr);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(std::isnan(want[i]));
      EXPECT_TRUE(std::isnan(got[i])) << special << " value " << i;
    }
  }
  // A constant row: every deviation 0, the outputs the bias (or 0) as in the reference.
  std::vector<float> x(1152, 3.25f), b(1152, -0.5f), w(1152, 2.0f);
  const std::vector<float> got = plugin_row(x, 1e-6f, w.data(), b.data());
  const std::vector<float> want = ref_layer_norm(x, 1e-6f, w.data(), b.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(bits(got[i]), bits(want[i])) << i;
}

}  // namespace
