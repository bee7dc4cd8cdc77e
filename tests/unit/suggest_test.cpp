#include <gtest/gtest.h>

#include "strata/suggest.hpp"

TEST(Suggest, FindsTyposAndSwaps) {
  const std::vector<std::string> keys = {"experts", "runtime", "sampling", "serve", "plugins", "model"};
  EXPECT_EQ(strata::nearest("expetrs", keys), "experts");
  EXPECT_EQ(strata::nearest("runtim", keys), "runtime");
  EXPECT_EQ(strata::nearest("modle", keys), "model");
  EXPECT_EQ(strata::did_you_mean("sevre", keys), " (did you mean 'serve'?)");
}

TEST(Suggest, NothingNearGivesNothing) {
  const std::vector<std::string> keys = {"experts", "runtime"};
  EXPECT_FALSE(strata::nearest("zzz", keys).has_value());
  EXPECT_EQ(strata::did_you_mean("completely_else", keys), "");
  EXPECT_FALSE(strata::nearest("experts", keys).has_value());  // an exact match is not a suggestion
}

TEST(Suggest, EditDistance) {
  EXPECT_EQ(strata::edit_distance("", "abc"), 3u);
  EXPECT_EQ(strata::edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(strata::edit_distance("kitten", "sitting"), 3u);
}
