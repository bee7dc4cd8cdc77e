// docs/CANONICAL_ARITHMETIC.md section 6 as nvcc compiles it (host pass, --fmad=false): the one-thread form of the
// 32-lane dot (what the attention kernel runs per score) equals the lane-array definition bit for bit, and
// sincos_d stays within 2 ulp-sized steps (2.3e-16 absolute) of libm over positions' angles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "strata/format/canonical_double.hpp"

namespace {

TEST(CanonicalDouble, SerialDotEqualsLaneDot) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (int n : {1, 17, 32, 64, 80, 128, 200, 256}) {
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      for (auto& v : a) v = nd(rng);
      for (auto& v : b) v = nd(rng) * 100.0f;
      const double lanes = strata::format::dot32_d(a.data(), b.data(), n);
      const double serial = strata::format::dot32_serial_d(a.data(), b.data(), n);
      ASSERT_EQ(std::memcmp(&lanes, &serial, sizeof lanes), 0) << "n " << n << ": " << lanes << " vs " << serial;
    }
  }
}

TEST(CanonicalDouble, SincosMatchesLibm) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> angle(-300000.0, 300000.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = i < 2000 ? i * 0.0015 : angle(rng);
    double s = 0.0, c = 0.0;
    strata::format::sincos_d(x, &s, &c);
    ASSERT_LE(std::fabs(s - std::sin(x)), 2.3e-16) << "sin " << x;
    ASSERT_LE(std::fabs(c - std::cos(x)), 2.3e-16) << "cos " << x;
  }
  double s = 0.0, c = 0.0;
  strata::format::sincos_d(NAN, &s, &c);
  EXPECT_TRUE(std::isnan(s) && std::isnan(c));
}

}  // namespace
