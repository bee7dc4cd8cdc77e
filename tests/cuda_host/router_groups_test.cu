// ROUTER's expert groups (backend 1.6, DeepSeek-V3) on the plugin's code path (router_block.cuh), run on the host:
// the group scores (router_group_score), the kept groups (router_group_kept) and the experts' ranks among the kept
// groups (router_ahead, with the kernel's NaN marking of the experts left out) choose the same k experts, in the
// same order, as the reference's definition (core/src/reference/op_router.cpp: groups ranked by the sum of their
// two largest scores with a stable sort, ties to the lower group; experts of the kept groups first, stable by
// score), in float and in double, with many ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "router_block.cuh"

namespace {

using strata::gpu::router_ahead;
using strata::gpu::router_group_kept;
using strata::gpu::router_group_score;

// The reference's choice (op_router.cpp's grouped branch) over the scores p_e + bias_e.
template <class T>
std::vector<int> reference_choice(const std::vector<T>& score, int n_group, int topk_group, int k) {
  const int n = static_cast<int>(score.size()), per = n / n_group;
  std::vector<T> gs(static_cast<size_t>(n_group));
  for (int g = 0; g < n_group; ++g) {
    std::vector<T> sc(score.begin() + g * per, score.begin() + (g + 1) * per);
    std::sort(sc.begin(), sc.end(), std::greater<>());
    gs[static_cast<size_t>(g)] = sc.size() >= 2 ? sc[0] + sc[1] : sc[0];
  }
  std::vector<int> groups(static_cast<size_t>(n_group));
  std::iota(groups.begin(), groups.end(), 0);
  std::stable_sort(groups.begin(), groups.end(), [&](int x, int y) { return gs[static_cast<size_t>(x)] > gs[static_cast<size_t>(y)]; });
  std::vector<bool> kept(static_cast<size_t>(n_group), false);
  for (int r = 0; r < topk_group; ++r) kept[static_cast<size_t>(groups[static_cast<size_t>(r)])] = true;
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    const bool kx = kept[static_cast<size_t>(x / per)], ky = kept[static_cast<size_t>(y / per)];
    if (kx != ky) return kx;
    return score[static_cast<size_t>(x)] > score[static_cast<size_t>(y)];
  });
  order.resize(static_cast<size_t>(k));
  return order;
}

// route_token's steps for one token, as its threads take them (shared scores, the groups' scores, NaN for the
// experts of the groups left out, each expert's rank by the scan, rank < k writes the id).
template <class T>
std::vector<int> plugin_choice(std::vector<T> score, int n_group, int topk_group, int k) {
  const int n = static_cast<int>(score.size()), per = n / n_group;
  std::vector<T> gs(static_cast<size_t>(n_group));
  for (int g = 0; g < n_group; ++g) gs[static_cast<size_t>(g)] = router_group_score(score.data() + g * per, per);
  std::vector<T> s = score;  // each thread's register copy
  for (int e = 0; e < n; ++e) {
    if (!router_group_kept(gs.data(), n_group, e / per, topk_group)) s[static_cast<size_t>(e)] = std::numeric_limits<T>::quiet_NaN();
  }
  score = s;  // the shared scores after the second barrier
  std::vector<int> ids(static_cast<size_t>(k), -1);
  for (int e = 0; e < n; ++e) {
    int rank = 0;
    for (int o = 0; o < n; ++o) rank += o < e ? score[static_cast<size_t>(o)] >= s[static_cast<size_t>(e)] : score[static_cast<size_t>(o)] > s[static_cast<size_t>(e)];
    const bool excluded = s[static_cast<size_t>(e)] != s[static_cast<size_t>(e)];
    if (rank < k && !excluded) {
      EXPECT_EQ(ids[static_cast<size_t>(rank)], -1) << "two experts at rank " << rank;
      ids[static_cast<size_t>(rank)] = e;
    }
  }
  return ids;
}

template <class T>
void check_cases(int n_expert, int n_group, int topk_group, int k, int levels) {
  std::mt19937 rng(static_cast<unsigned>(n_expert * 131 + n_group * 7 + topk_group + k));
  std::uniform_int_distribution<int> level(0, levels - 1);
  for (int c = 0; c < 200; ++c) {
    // Few distinct values: ties between experts and between groups' sums.
    std::vector<T> score(static_cast<size_t>(n_expert));
    for (T& v : score) v = static_cast<T>(level(rng)) / static_cast<T>(levels) + static_cast<T>(0.125);
    const std::vector<int> want = reference_choice(score, n_group, topk_group, k);
    const std::vector<int> got = plugin_choice(score, n_group, topk_group, k);
    ASSERT_EQ(got, want) << "case " << c << ", " << n_expert << " experts in " << n_group << " groups, keep "
                         << topk_group << ", k " << k;
  }
}

TEST(CudaRouterGroups, GroupScoreIsTheSumOfTheTwoLargest) {
  const float a[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  EXPECT_EQ(router_group_score(a, 5), 4.0f);  // a tie counts twice
  const float b[3] = {3.0f, 1.0f, 2.0f};
  EXPECT_EQ(router_group_score(b, 3), 5.0f);
  EXPECT_EQ(router_group_score(b, 1), 3.0f);  // one expert: its score
  const double c[2] = {-INFINITY, -INFINITY};
  EXPECT_EQ(router_group_score(c, 2), -INFINITY);
  const float gs[4] = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_TRUE(router_group_kept(gs, 4, 1, 1));   // ties to the lower group
  EXPECT_FALSE(router_group_kept(gs, 4, 2, 1));
  EXPECT_TRUE(router_group_kept(gs, 4, 2, 2));
  EXPECT_FALSE(router_group_kept(gs, 4, 0, 3));
  EXPECT_TRUE(router_ahead(1.0f, 1.0f, true));
  EXPECT_FALSE(router_ahead(1.0f, 1.0f, false));
}

TEST(CudaRouterGroups, ChoosesAsTheReferenceFloat) {
  check_cases<float>(256, 8, 4, 8, 9);    // DeepSeek-V3's shape
  check_cases<float>(64, 8, 3, 6, 4);
  check_cases<float>(16, 4, 1, 4, 3);     // k = every expert of the one kept group
  check_cases<float>(12, 12, 5, 3, 3);    // groups of one expert
  check_cases<float>(32, 2, 2, 7, 5);     // every group kept
}

TEST(CudaRouterGroups, ChoosesAsTheReferenceDouble) {
  check_cases<double>(256, 8, 4, 8, 9);
  check_cases<double>(64, 8, 3, 6, 4);
  check_cases<double>(16, 4, 1, 4, 3);
  check_cases<double>(12, 12, 5, 3, 3);
}

}  // namespace
