// format::check_op_array: backend 1.6 appended src4 to strata_op, and ops travel in arrays, so a plugin refuses an
// array whose elements are not its own size (a host built against another plugin_api.h) rather than misread it.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "strata/format/tensor_checks.hpp"
#include "strata/op_tensor.hpp"

namespace {

TEST(OpArrayCheck, TakesThisBuildsOpsAndRefusesOthers) {
  strata_op ops[2] = {strata::new_op(STRATA_OP_ADD), strata::new_op(STRATA_OP_ADD)};
  EXPECT_FALSE(strata::format::check_op_array(ops, 2));
  EXPECT_FALSE(strata::format::check_op_array(nullptr, 0));
  ops[0].struct_size = static_cast<uint32_t>(offsetof(strata_op, src4));  // a backend 1.5 host's op
  const auto why = strata::format::check_op_array(ops, 2);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find(std::to_string(offsetof(strata_op, src4)) + " bytes"), std::string::npos) << *why;
  EXPECT_NE(why->find("one tree"), std::string::npos) << *why;
}

}  // namespace
