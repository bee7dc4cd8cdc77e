// backend_options: what a backend plugin instance of the launch is given (issue 28: runtime.canonical_double
// reaches the main backend, the peer card and the peer link's service through it).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strata/backend.hpp"
#include "strata/config.hpp"

namespace cfg = strata::config;

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(BackendOptions, CanonicalDoubleIsOffByDefault) {
  const cfg::Launch l = cfg::defaults();
  EXPECT_FALSE(l.runtime.canonical_double);
  EXPECT_TRUE(strata::backend_options(l, "cuda").empty());
}

TEST(BackendOptions, CanonicalDoubleReachesThePluginAfterItsOwnOptions) {
  cfg::Launch l = cfg::defaults();
  l.runtime.canonical_double = true;
  cfg::PluginEntry cuda;
  cuda.name = "cuda";
  cuda.options = {{"device", "0"}};
  l.plugins.push_back(cuda);
  EXPECT_EQ(strata::backend_options(l, "cuda"), (std::vector<std::string>{"device=0", "canonical_double=true"}));
  EXPECT_EQ(strata::backend_options(l, "cpu_avx2"), (std::vector<std::string>{"canonical_double=true"}));
}

TEST(BackendOptions, APluginsOwnCanonicalDoubleIsLeftAsItIs) {
  cfg::Launch l = cfg::defaults();
  l.runtime.canonical_double = true;
  cfg::PluginEntry cuda;
  cuda.name = "cuda";
  cuda.options = {{"canonical_double", "false"}};
  l.plugins.push_back(cuda);
  const std::vector<std::string> o = strata::backend_options(l, "cuda");
  EXPECT_TRUE(has(o, "canonical_double=false"));
  EXPECT_FALSE(has(o, "canonical_double=true"));
}

}  // namespace
