// The CPU pool's roofline line of the decode summary, on traffic made by hand.
#include <gtest/gtest.h>

#include <string>

#include "strata/experts/pool_roofline.hpp"

namespace ex = strata::experts;

namespace {

// 10 decode tokens; 40 calls of 103 MB each in 2.45 ms: 412 MB and 9.8 ms a token, 42.04 GB/s.
ex::PoolTraffic decode_traffic() {
  ex::PoolTraffic t;
  t.tokens = 10;
  for (int i = 0; i < 40; ++i) t.add_call(103'000'000, 2.45e-3);
  return t;
}

TEST(PoolRoofline, CallsAddUp) {
  const ex::PoolTraffic t = decode_traffic();
  EXPECT_EQ(t.calls, 40u);
  EXPECT_EQ(t.bytes, 4'120'000'000u);
  EXPECT_NEAR(t.seconds, 0.098, 1e-12);
  EXPECT_DOUBLE_EQ(t.bytes_per_token(), 412e6);
  EXPECT_NEAR(t.seconds_per_token(), 9.8e-3, 1e-12);
  EXPECT_NEAR(t.bytes_per_second(), 4.12e9 / 0.098, 1.0);
}

TEST(PoolRoofline, LineAgainstTheHostReadRate) {
  // 42.04 GB/s of 59.1 GB/s: 71%.
  EXPECT_EQ(ex::render_pool_roofline(decode_traffic(), 59.1e9),
            "CPU pool: 412 MB/token read in 9.80 ms/token = 42.0 GB/s, 71% of the host read rate 59.1 GB/s");
  // A pool faster than the probe's read (it read from cache, or the probe ran on fewer threads) goes past 100%.
  EXPECT_EQ(ex::render_pool_roofline(decode_traffic(), 30e9),
            "CPU pool: 412 MB/token read in 9.80 ms/token = 42.0 GB/s, 140% of the host read rate 30.0 GB/s");
}

TEST(PoolRoofline, WithoutAHostReadRateTheLineSaysWhy) {
  EXPECT_EQ(ex::render_pool_roofline(decode_traffic(), 0),
            "CPU pool: 412 MB/token read in 9.80 ms/token = 42.0 GB/s (no host read rate to compare: the "
            "link probe measures it with experts.pcie_frac auto)");
}

TEST(PoolRoofline, SmallExpertsKeepThreeDigits) {
  // A tiny model's decode: 450 kB and 0.215 ms a token over 12 tokens.
  ex::PoolTraffic t;
  t.tokens = 12;
  for (int i = 0; i < 24; ++i) t.add_call(225'000, 0.1075e-3);
  EXPECT_EQ(ex::render_pool_roofline(t, 10e9),
            "CPU pool: 0.450 MB/token read in 0.215 ms/token = 2.09 GB/s, 21% of the host read rate "
            "10.0 GB/s");
}

TEST(PoolRoofline, NothingWithoutPoolWork) {
  ex::PoolTraffic t;
  EXPECT_EQ(ex::render_pool_roofline(t, 59.1e9), "");
  t.tokens = 12;  // decode windows ran, every miss over PCIe
  EXPECT_EQ(ex::render_pool_roofline(t, 59.1e9), "");
  // Calls but no window the pool serves (cannot happen in the engine): no per-token figures to give.
  ex::PoolTraffic no_tokens;
  no_tokens.add_call(1000, 1e-3);
  EXPECT_EQ(ex::render_pool_roofline(no_tokens, 59.1e9), "");
}

}  // namespace
