// The link probe's default PCIe share: copies and the pool finish together.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "strata/error.hpp"
#include "strata/experts/link_share.hpp"

namespace ex = strata::experts;

TEST(ExpertsLinkShare, BalancesTheLinkAgainstHostReads) {
  EXPECT_DOUBLE_EQ(ex::default_pcie_frac(50e9, 50e9, 1000000), 0.5);
  // 50 GB/s over the link, 75 GB/s read by the pool: per expert 1/50 against 1/75, so 2 of 5 go over PCIe.
  EXPECT_NEAR(ex::default_pcie_frac(50e9, 75e9, 1000000), 0.4, 1e-12);
  // A faster link takes more.
  EXPECT_GT(ex::default_pcie_frac(100e9, 75e9, 1000000), 0.5);
}

TEST(ExpertsLinkShare, ACopysFixedCostWeighsMoreOnSmallExperts) {
  // 1 MB at 100 GB/s is 10 us, plus 10 us a copy: 20 us; the pool reads it at 50 GB/s in 20 us.
  EXPECT_NEAR(ex::default_pcie_frac(100e9, 50e9, 1000000, 10e-6), 0.5, 1e-12);
  // Without the fixed cost the link's 10 us would take 2 of 3.
  EXPECT_NEAR(ex::default_pcie_frac(100e9, 50e9, 1000000), 2.0 / 3.0, 1e-12);
  const double small = ex::default_pcie_frac(100e9, 50e9, 100000, 10e-6);
  const double large = ex::default_pcie_frac(100e9, 50e9, 100000000, 10e-6);
  EXPECT_LT(small, large);
  EXPECT_LT(large, 2.0 / 3.0);
}

TEST(ExpertsLinkShare, EdgesAndBadMeasures) {
  EXPECT_EQ(ex::default_pcie_frac(0.0, 50e9, 1000), 0.0);
  EXPECT_EQ(ex::default_pcie_frac(50e9, 0.0, 1000), 1.0);
  try {
    ex::default_pcie_frac(std::nan(""), 50e9, 1000);
    FAIL() << "accepted NaN";
  } catch (const strata::Error& e) {
    EXPECT_STREQ(e.what(),
                 "link probe: host-to-device bandwidth is nan: a measure must be a finite number >= 0; set "
                 "experts.pcie_frac by hand or re-run the probe");
  }
  EXPECT_THROW(ex::default_pcie_frac(50e9, -1.0, 1000), strata::Error);
  EXPECT_THROW(ex::default_pcie_frac(50e9, 50e9, 1000, std::numeric_limits<double>::infinity()), strata::Error);
  EXPECT_THROW(ex::default_pcie_frac(50e9, 50e9, 0), strata::Error);
}
