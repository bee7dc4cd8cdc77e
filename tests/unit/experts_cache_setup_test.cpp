// The cache a launch's `experts:` section makes: budget, policy and first residents from its keys.
#include <gtest/gtest.h>

#include "strata/error.hpp"
#include "strata/experts/cache_setup.hpp"
#include "test_temp_dir.hpp"

namespace ex = strata::experts;
namespace cfg = strata::config;

namespace {

ex::ExpertGeometry geometry() {
  ex::ExpertGeometry g;
  g.layers.assign(2, ex::LayerExperts{4, 1000});
  return g;
}

ex::DeviceRoom room() {
  ex::DeviceRoom r;
  r.free_bytes = uint64_t{1} << 30;
  return r;
}

const ex::ModelIdentity kModel{"two-by-four", 2, 4};

}  // namespace

TEST(ExpertsCacheSetup, UniformWithoutAProfile) {
  cfg::ExpertsConfig c;
  c.cache = {cfg::CacheSize::Kind::Percent, 50, 0};
  c.policy = cfg::CachePolicy::Lru;
  const auto cache = ex::make_expert_cache(c, geometry(), room(), kModel);
  EXPECT_EQ(cache->n_slots(), 4u);
  EXPECT_EQ(cache->policy().name(), "lru");
  EXPECT_EQ(cache->usable_slot({1, 1}), 3u);
}

TEST(ExpertsCacheSetup, FromTheProfileFile) {
  ex::ExpertProfile p(kModel);
  p.record_positions(10);
  p.record({0, 3}, 9);
  p.record({1, 2}, 8);
  p.record({1, 3}, 7);
  const std::string path = strata::testing_support::test_temp_path("experts_setup", "p.json");
  p.save(path);
  cfg::ExpertsConfig c;
  c.cache = {cfg::CacheSize::Kind::Bytes, 0, 3000};
  c.profile = path;
  const auto cache = ex::make_expert_cache(c, geometry(), room(), kModel);
  EXPECT_EQ(cache->policy().name(), "lfu");
  EXPECT_EQ(cache->n_slots(), 3u);
  // The three profiled experts, whatever the even spread would have given each layer.
  EXPECT_EQ(cache->content(0), (ex::ExpertKey{0, 3}));
  EXPECT_EQ(cache->content(1), (ex::ExpertKey{1, 2}));
  EXPECT_EQ(cache->content(2), (ex::ExpertKey{1, 3}));
  try {
    ex::make_expert_cache(c, geometry(), room(), {"another", 2, 4});
    FAIL() << "used the profile of another model";
  } catch (const strata::Error& e) {
    EXPECT_EQ(std::string(e.what()), path +
                                         ": the profile is of model \"two-by-four\"; this model is \"another\": record "
                                         "a profile with this model (strata profile --model M) or remove "
                                         "experts.profile");
  }
}
