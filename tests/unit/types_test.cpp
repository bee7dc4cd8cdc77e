#include <gtest/gtest.h>

#include "strata/format/types.hpp"

using strata::format::GgmlType;

TEST(Types, KnownIdsHaveGgmlBlockSizes) {
  auto q4k = strata::format::type_traits(12);
  ASSERT_TRUE(q4k.has_value());
  EXPECT_EQ(q4k->block_elems, 256u);
  EXPECT_EQ(q4k->block_bytes, 144u);
  EXPECT_EQ(strata::format::row_bytes(GgmlType::Q8_0, 64), 68u);
}

TEST(Types, RemovedIdsAreUnknown) {
  EXPECT_FALSE(strata::format::type_traits(4).has_value());   // Q4_2, removed from ggml
  EXPECT_FALSE(strata::format::type_traits(31).has_value());  // Q4_0_4_4, removed
  EXPECT_FALSE(strata::format::type_traits(1000).has_value());
}

TEST(Types, NamesRoundTrip) {
  EXPECT_EQ(strata::format::type_from_name("Q4_K"), GgmlType::Q4_K);
  EXPECT_EQ(strata::format::type_from_name("iq2_xs"), GgmlType::IQ2_XS);
  EXPECT_FALSE(strata::format::type_from_name("q4_k_m").has_value());
}
