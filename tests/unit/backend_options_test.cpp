// backend_options: what a backend plugin instance of the launch is given (issue 28: runtime.canonical_double
// reaches the main backend, the peer card and the peer link's service through it); and a backend's lifetime token,
// which caches made for one instance (the projector's device weights) key on.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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

// Each instance has its own token, even one made where a destroyed one stood, and the token expires with it (the
// first H200 run found the projector's device copy keyed on an address that a cuda backend reused after a
// cpu_avx2 one: host pointers reached the GPU's kernels).
TEST(BackendLifetime, EachInstanceItsOwnTokenThatExpiresWithIt) {
  std::weak_ptr<const void> first;
  for (int i = 0; i < 4; ++i) {
    const std::unique_ptr<strata::Backend> b = strata::make_reference_backend();
    const std::weak_ptr<const void> now = b->lifetime();
    EXPECT_FALSE(now.expired());
    if (i == 0) {
      first = now;
    } else {
      EXPECT_TRUE(first.owner_before(now) || now.owner_before(first)) << "instance " << i << " shares the first's token";
    }
    const std::weak_ptr<const void> again = b->lifetime();
    EXPECT_FALSE(again.owner_before(now) || now.owner_before(again));
  }
  EXPECT_TRUE(first.expired());
}

}  // namespace
