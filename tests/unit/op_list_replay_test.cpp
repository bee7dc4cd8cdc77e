// A GPU plugin replays a captured graph only for an op list it has seen byte for byte (plugins/cuda/graph_cache.hpp:
// the key is the ops' bytes and each MOE_ROUTED table and expert form). Positions and lengths live in device
// memory, so one-token steps and verify windows of one size at successive positions must hand the device the same
// lists; a list that changes with the position is captured anew for every window and never replayed, and a window
// then costs its launches one by one. Checked on the stand-in GPU, all in VRAM and on the hybrid path.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/engine.hpp"
#include "strata/model.hpp"
#include "strata/plugin_api.h"

namespace {

using strata::TokenId;
using Key = std::vector<unsigned char>;

// The cuda plugin's graph key (GraphCache::key_of), rebuilt here from the public op layout.
Key key_of(std::span<const strata_op> ops) {
  Key key(ops.size() * sizeof(strata_op));
  std::memcpy(key.data(), ops.data(), key.size());
  for (const strata_op& op : ops) {
    if (op.kind != STRATA_OP_MOE_ROUTED || op.extra == nullptr) continue;
    const auto* table = static_cast<const strata_expert_table*>(op.extra);
    const auto* t = reinterpret_cast<const unsigned char*>(table);
    key.insert(key.end(), t, t + sizeof(strata_expert_table));
    if (table->form != nullptr) {
      const auto* f = reinterpret_cast<const unsigned char*>(table->form);
      key.insert(key.end(), f, f + sizeof(strata_expert_form));
    }
  }
  return key;
}

std::string moe() { return strata::test::models_dir() + "/stories260K-moe.gguf"; }

// An engine on a stand-in GPU whose op lists go to `lists`; `percent` > 0: the hybrid path at that expert budget.
std::unique_ptr<strata::Engine> recording_engine(std::vector<Key>& lists, uint32_t percent) {
  strata::EngineSettings s = strata::test::test_settings();
  s.max_window_logits = 16;
  s.graphs = true;
  s.threads = 2;
  if (percent > 0) {
    s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
    s.experts.cache.percent = percent;
    s.experts.pcie_frac = 0.5;
  }
  auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
  gpu->watch_ops([&lists](std::span<const strata_op> ops) { lists.push_back(key_of(ops)); });
  if (percent == 0) return std::make_unique<strata::Engine>(strata::Model::load(moe()), std::move(gpu), s);
  return std::make_unique<strata::Engine>(strata::Model::load(moe()), std::move(gpu), s,
                                          strata::test::built_plugins().instantiate("cpu_avx2"));
}

// Windows of n tokens one after another (n = 1: one-token steps through feed); each window's op lists.
std::vector<std::vector<Key>> windows_of(strata::Engine& e, std::vector<Key>& lists, size_t n, int count) {
  std::vector<std::vector<Key>> out;
  TokenId next = 7;
  for (int w = 0; w < count; ++w) {
    std::vector<TokenId> tokens;
    for (size_t i = 0; i < n; ++i) tokens.push_back(static_cast<TokenId>((next + 37 * i) % 500 + 3));
    lists.clear();
    std::span<const float> logits = n == 1 ? e.feed(0, tokens) : e.feed_window(0, tokens);
    next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(lists);
  }
  return out;
}

void expect_windows_repeat(uint32_t percent) {
  std::vector<Key> last_size;  // the previous size's first list: another size must give other bytes
  for (size_t n : {1, 2, 3, 4, 5, 6, 8}) {
    SCOPED_TRACE("windows of " + std::to_string(n) + " tokens" +
                 (percent > 0 ? ", hybrid at " + std::to_string(percent) + "%" : ", all in VRAM"));
    std::vector<Key> lists;
    auto e = recording_engine(lists, percent);
    std::vector<TokenId> prompt;
    for (int i = 0; i < 21; ++i) prompt.push_back(static_cast<TokenId>((i * 53 + 11) % 500 + 3));
    e->feed(0, prompt);
    // Nine windows, so that their positions cross a 64-key chunk and fall at every offset a small ring could have.
    const std::vector<std::vector<Key>> w = windows_of(*e, lists, n, 9);
    ASSERT_FALSE(w[1].empty());
    if (!last_size.empty()) {
      EXPECT_FALSE(w[1].front() == last_size.front()) << "the key does not see the window's size";
    }
    last_size = w[1];
    for (size_t i = 2; i < w.size(); ++i) {
      ASSERT_EQ(w[i].size(), w[1].size()) << "window " << i << " gave the device another number of op lists";
      for (size_t j = 0; j < w[i].size(); ++j) {
        EXPECT_TRUE(w[i][j] == w[1][j]) << "window " << i << ", op list " << j
                                        << ": not the bytes of window 1's, so a GPU would capture it anew";
      }
    }
  }
}

TEST(OpListReplay, WindowsOfOneSizeGiveTheDeviceTheSameListsAllInVram) { expect_windows_repeat(0); }

TEST(OpListReplay, WindowsOfOneSizeGiveTheDeviceTheSameListsOnTheHybridPath) { expect_windows_repeat(25); }

}  // namespace
