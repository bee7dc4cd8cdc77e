// The link probe on a GPU (ctest label `gpu`): page-locked copies over the real link, at a rate a PCIe or NVLink
// host link can have, and the small copies' queued cost in microseconds, not milliseconds.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gpu_test_support.hpp"
#include "strata/backend.hpp"
#include "strata/experts/link_probe.hpp"

namespace {

TEST(GpuLinkProbe, MeasuresAPinnedLink) {
  std::string why;
  const std::string gpu = strata::gpu_tests::gpu_backend(why);
  if (gpu.empty()) GTEST_SKIP() << why;
  auto be = strata::make_plugin_backend(strata::gpu_tests::plugins().instantiate(gpu));
  ASSERT_NE(be->device_memory(), nullptr);
  ASSERT_NE(be->device_queues(), nullptr);
  const strata::experts::LinkMeasure m = strata::experts::probe_link(*be->device_memory(), *be->device_queues());
  std::printf("[link] %s\n", strata::experts::describe(m).c_str());
  EXPECT_TRUE(m.pinned) << m.why_not_pinned;
  EXPECT_GT(m.h2d_bytes_per_s, 2e9) << "slower than any PCIe 3.0 x4 link";
  EXPECT_LT(m.h2d_bytes_per_s, 1e12);
  EXPECT_GT(m.copy_overhead_s, 0.0);
  EXPECT_LT(m.copy_overhead_s, 1e-3);
}

}  // namespace
