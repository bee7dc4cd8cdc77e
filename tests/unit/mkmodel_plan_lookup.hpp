// Tests' access to `strata mkmodel`'s presets and plans: a preset that must exist, and a plan's tensors by name.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "strata/arch.hpp"
#include "strata/mkmodel.hpp"

namespace strata::test {

// The preset `name` for `arch`; a test failure (and a default spec) when mkmodel has none.
inline mkmodel::ModelSpec shape(const char* name, Arch arch) {
  const auto s = mkmodel::shape_preset(name, arch);
  EXPECT_TRUE(s.has_value()) << name;
  return s.value_or(mkmodel::ModelSpec{});
}

// The planned tensors by name (pointers into `tensors`, which must outlive the map).
inline std::map<std::string, const mkmodel::PlannedTensor*> by_name(const std::vector<mkmodel::PlannedTensor>& tensors) {
  std::map<std::string, const mkmodel::PlannedTensor*> out;
  for (const auto& t : tensors) out[t.name] = &t;
  return out;
}

}  // namespace strata::test
