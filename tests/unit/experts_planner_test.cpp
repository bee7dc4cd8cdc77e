// The planner: HIT / PEER / PCIe / CPU per layer, the PCIe share and its ties, the balancer's hook, several
// devices, and the counters of the decode summary.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "strata/error.hpp"
#include "strata/experts/expert_cache.hpp"
#include "strata/experts/plan_counters.hpp"
#include "strata/experts/planner.hpp"
#include "error_text.hpp"

namespace ex = strata::experts;

namespace {

// A device's slots as a plain table.
class TableResidency final : public ex::ResidencyView {
 public:
  explicit TableResidency(std::map<ex::ExpertKey, uint32_t> slots) : slots_(std::move(slots)) {}
  std::optional<uint32_t> usable_slot(ex::ExpertKey key) const override {
    const auto it = slots_.find(key);
    if (it == slots_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<ex::ExpertKey, uint32_t> slots_;
};

ex::ExpertGeometry geometry(uint32_t n_layer, uint32_t n_expert, uint64_t bytes) {
  ex::ExpertGeometry g;
  g.layers.assign(n_layer, ex::LayerExperts{n_expert, bytes});
  return g;
}

std::vector<uint32_t> ids(const std::vector<ex::PlannedExpert>& list) {
  std::vector<uint32_t> out;
  for (const ex::PlannedExpert& e : list) out.push_back(e.expert);
  return out;
}

using strata::test::error_of;

const TableResidency kNothing({});

}  // namespace

TEST(ExpertsPlanner, HitsAndTheMissSplit) {
  const TableResidency gpu({{{0, 1}, 7}, {{0, 4}, 2}});
  ex::Planner p(geometry(2, 16, 1000), {&gpu}, 0.5);
  // Misses by tokens: 9 (6), 3 (4), 12 (4), 5 (1), 8 (1); round(0.5 x 5) = 3 over PCIe: 9, then 3 and 12.
  const std::vector<ex::ExpertUse> uses = {{12, 4}, {1, 2}, {9, 6}, {5, 1}, {4, 3}, {3, 4}, {8, 1}};
  const ex::LayerPlan plan = p.plan(0, uses);
  EXPECT_EQ(plan.layer, 0u);
  ASSERT_EQ(plan.hit.size(), 2u);
  EXPECT_EQ(plan.hit[0], (ex::PlannedExpert{1, 2, 0, 7}));
  EXPECT_EQ(plan.hit[1], (ex::PlannedExpert{4, 3, 0, 2}));
  EXPECT_TRUE(plan.peer.empty());
  EXPECT_EQ(ids(plan.pcie), (std::vector<uint32_t>{3, 9, 12}));
  EXPECT_EQ(ids(plan.cpu), (std::vector<uint32_t>{5, 8}));
  EXPECT_EQ(plan.cpu[0], (ex::PlannedExpert{5, 1, 0, 0}));
  // Same hits on another layer are other keys.
  EXPECT_TRUE(p.plan(1, uses).hit.empty());
}

TEST(ExpertsPlanner, ShareZeroAndOne) {
  const std::vector<ex::ExpertUse> uses = {{2, 1}, {0, 3}, {7, 2}};
  ex::Planner p(geometry(1, 8, 10), {&kNothing}, 0.0);
  ex::LayerPlan none = p.plan(0, uses);
  EXPECT_TRUE(none.pcie.empty());
  EXPECT_EQ(ids(none.cpu), (std::vector<uint32_t>{0, 2, 7}));
  p.set_pcie_frac(1.0);
  ex::LayerPlan all = p.plan(0, uses);
  EXPECT_EQ(ids(all.pcie), (std::vector<uint32_t>{0, 2, 7}));
  EXPECT_TRUE(all.cpu.empty());
  EXPECT_TRUE(p.plan(0, {}).pcie.empty());
}

TEST(ExpertsPlanner, EqualTokensGoByExpertId) {
  ex::Planner p(geometry(1, 64, 10), {&kNothing}, 0.25);
  // Eight misses of one token each: two go over PCIe, the lowest ids.
  const std::vector<ex::ExpertUse> uses = {{40, 1}, {33, 1}, {7, 1}, {60, 1}, {12, 1}, {5, 1}, {22, 1}, {9, 1}};
  const ex::LayerPlan plan = p.plan(0, uses);
  EXPECT_EQ(ids(plan.pcie), (std::vector<uint32_t>{5, 7}));
  EXPECT_EQ(ids(plan.cpu), (std::vector<uint32_t>{9, 12, 22, 33, 40, 60}));
}

TEST(ExpertsPlanner, TheDefaultCountRoundsTheShare) {
  ex::Planner p(geometry(1, 8, 10), {&kNothing}, 0.5);
  EXPECT_EQ(p.default_pcie_count(0), 0u);
  EXPECT_EQ(p.default_pcie_count(1), 1u);  // 0.5 rounds away from zero
  EXPECT_EQ(p.default_pcie_count(3), 2u);
  p.set_pcie_frac(0.3);
  EXPECT_EQ(p.default_pcie_count(1), 0u);
  EXPECT_EQ(p.default_pcie_count(5), 2u);
  EXPECT_EQ(p.default_pcie_count(128), 38u);
}

TEST(ExpertsPlanner, PeerDevicesHoldWhatThisOneMisses) {
  const TableResidency main({{{0, 1}, 0}, {{0, 2}, 1}});
  const TableResidency peer({{{0, 2}, 5}, {{0, 3}, 6}, {{0, 4}, 9}});
  const TableResidency third({{{0, 4}, 1}, {{0, 5}, 2}});
  ex::Planner p(geometry(1, 8, 100), {&main, &peer, &third}, 1.0);
  EXPECT_EQ(p.n_devices(), 3u);
  const std::vector<ex::ExpertUse> uses = {{5, 1}, {4, 2}, {3, 3}, {2, 4}, {1, 5}, {0, 6}};
  const ex::LayerPlan plan = p.plan(0, uses);
  // 2 is on both cards: this card's slot wins. 4 is on both peers: the first peer's.
  EXPECT_EQ(ids(plan.hit), (std::vector<uint32_t>{1, 2}));
  ASSERT_EQ(plan.peer.size(), 3u);
  EXPECT_EQ(plan.peer[0], (ex::PlannedExpert{3, 3, 1, 6}));
  EXPECT_EQ(plan.peer[1], (ex::PlannedExpert{4, 2, 1, 9}));
  EXPECT_EQ(plan.peer[2], (ex::PlannedExpert{5, 1, 2, 2}));
  EXPECT_EQ(ids(plan.pcie), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(plan.cpu.empty());
}

TEST(ExpertsPlanner, TheHookSetsTheCountPerLayer) {
  ex::Planner p(geometry(3, 8, 10), {&kNothing}, 0.0);
  std::vector<std::vector<ex::ExpertUse>> seen;
  p.set_pcie_count_hook([&](uint32_t layer, std::span<const ex::ExpertUse> misses) -> uint32_t {
    seen.emplace_back(misses.begin(), misses.end());
    return layer == 0 ? 1 : 100;
  });
  const std::vector<ex::ExpertUse> uses = {{1, 1}, {6, 3}, {2, 2}};
  EXPECT_EQ(ids(p.plan(0, uses).pcie), (std::vector<uint32_t>{6}));
  // More than there are: all of them.
  EXPECT_EQ(ids(p.plan(2, uses).pcie), (std::vector<uint32_t>{1, 2, 6}));
  ASSERT_EQ(seen.size(), 2u);
  // The hook sees the misses in the order they are taken.
  ASSERT_EQ(seen[0].size(), 3u);
  EXPECT_EQ(seen[0][0].expert, 6u);
  EXPECT_EQ(seen[0][1].expert, 2u);
  EXPECT_EQ(seen[0][2].expert, 1u);
  p.set_pcie_count_hook({});
  EXPECT_TRUE(p.plan(0, uses).pcie.empty());
}

TEST(ExpertsPlanner, BadInputIsRefused) {
  ex::ExpertGeometry g = geometry(2, 4, 10);
  g.layers[1] = {};
  EXPECT_EQ(error_of([&] { ex::Planner(g, {&kNothing}, 1.5); }),
            "experts.pcie_frac: 1.500000 is not a share between 0 and 1");
  EXPECT_EQ(error_of([&] { ex::Planner(g, {}, 0.5); }),
            "planner: every device needs a residency view (device 0 is this engine's)");
  EXPECT_EQ(error_of([&] {
              ex::Planner(g, {&kNothing, nullptr}, 0.5);
            }),
            "planner: every device needs a residency view (device 0 is this engine's)");
  ex::Planner p(g, {&kNothing}, 0.5);
  EXPECT_THROW(p.set_pcie_frac(-0.1), strata::Error);
  EXPECT_DOUBLE_EQ(p.pcie_frac(), 0.5);
  const std::vector<ex::ExpertUse> twice = {{1, 1}, {1, 2}};
  EXPECT_EQ(error_of([&] { p.plan(0, twice); }), "planner: layer 0 expert 1 is listed twice");
  const std::vector<ex::ExpertUse> past = {{4, 1}};
  EXPECT_EQ(error_of([&] { p.plan(0, past); }), "planner: layer 0 expert 4 is past the layer's 4 experts");
  EXPECT_EQ(error_of([&] { p.plan(1, past); }), "planner: layer 1 has no routed experts");
  EXPECT_EQ(error_of([&] { p.plan(2, past); }), "planner: layer 2 has no routed experts");
}

// With the real cache as device 0: a slot under a pending copy is not a HIT until the copy is committed.
TEST(ExpertsPlanner, ACacheSlotBeingRewrittenIsAMiss) {
  const ex::ExpertGeometry g = geometry(1, 8, 100);
  ex::DeviceRoom room;
  room.free_bytes = 1 << 20;
  room.margin_bytes = 0;
  ex::ExpertCache cache(g, ex::plan_slot_budget({strata::config::CacheSize::Kind::Bytes, 0, 200}, g, room),
                        ex::make_lru_policy(g.key_space()));
  cache.fill_uniform();  // 0, 1
  ex::Planner p(g, {&cache}, 0.0);
  const std::vector<ex::ExpertUse> window1 = {{1, 1}, {5, 1}};
  cache.begin_window(1);
  cache.record(0, window1);
  const std::vector<ex::SwapMove> moves = cache.plan_swaps(1);
  ASSERT_EQ(moves.size(), 1u);  // 5 into slot 0 (0 is unused)
  const std::vector<ex::ExpertUse> window2 = {{0, 1}, {1, 1}, {5, 1}};
  ex::LayerPlan during = p.plan(0, window2);
  EXPECT_EQ(ids(during.hit), (std::vector<uint32_t>{1}));
  EXPECT_EQ(ids(during.cpu), (std::vector<uint32_t>{0, 5}));
  cache.commit(moves[0]);
  ex::LayerPlan after = p.plan(0, window2);
  EXPECT_EQ(ids(after.hit), (std::vector<uint32_t>{1, 5}));
  EXPECT_EQ(after.hit[1].slot, 0u);
  EXPECT_EQ(ids(after.cpu), (std::vector<uint32_t>{0}));
}

TEST(ExpertsPlanner, CountersPerTokenAndBytesBySource) {
  ex::ExpertGeometry g = geometry(2, 8, 1000);
  g.layers[1].expert_bytes = 3000;
  const TableResidency gpu({{{0, 0}, 0}, {{1, 0}, 0}});
  const TableResidency peer({{{1, 1}, 0}});
  ex::Planner p(g, {&gpu, &peer}, 0.5);
  ex::PlanCounters c;
  // One window of 2 tokens, k = 2: each layer has 4 (token, expert) pairs.
  c.add_window(2);
  const std::vector<ex::ExpertUse> l0 = {{0, 2}, {3, 1}, {4, 1}};
  const std::vector<ex::ExpertUse> l1 = {{0, 1}, {1, 1}, {6, 2}};
  c.add(p.plan(0, l0), g);
  c.add(p.plan(1, l1), g);
  using S = ex::ExpertSource;
  EXPECT_EQ(c.of(S::Hit), (ex::SourceCounts{2, 3, 4000}));
  EXPECT_EQ(c.of(S::Peer), (ex::SourceCounts{1, 1, 3000}));
  // Layer 0: misses 3 and 4 (1 token each), round(1) = 1 over PCIe: 3. Layer 1: one miss, 6: round(0.5) = 1.
  EXPECT_EQ(c.of(S::Pcie), (ex::SourceCounts{2, 3, 4000}));
  EXPECT_EQ(c.of(S::Cpu), (ex::SourceCounts{1, 1, 1000}));
  EXPECT_DOUBLE_EQ(c.experts_per_token(S::Hit), 1.5);
  EXPECT_DOUBLE_EQ(c.experts_per_token(S::Cpu), 0.5);
  EXPECT_DOUBLE_EQ(c.bytes_per_token(S::Pcie), 2000.0);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_EQ(c.layers[1][static_cast<size_t>(S::Peer)].experts, 1u);
  EXPECT_EQ(c.layers[0][static_cast<size_t>(S::Pcie)].experts, 1u);
  EXPECT_EQ(c.windows, 1u);
  EXPECT_EQ(ex::source_name(S::Pcie), "pcie");
  EXPECT_DOUBLE_EQ(ex::PlanCounters{}.experts_per_token(S::Hit), 0.0);
}
