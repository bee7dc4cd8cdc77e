// Verify windows on the hybrid expert path (issue 30), on the CPU: the generated tiny qwen3moe on a stand-in GPU
// (host memory, cpu_avx2's arithmetic) with 0%, 25% and 100% of its experts in the VRAM cache, in fast and simple
// mode. A verify window's misses are the union of its tokens' experts; its every row must be the one-token step's,
// bit for bit, and speculative decoding (drafts that are right, and drafts that are wrong every third token) must
// give the plain greedy ids.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/config.hpp"
#include "strata/generate.hpp"
#include "strata/sampling.hpp"
#include "strata/speculative.hpp"
#include "tiny_moe_model.hpp"

namespace {

using strata::TokenId;

bool has_cpu_avx2() {
  for (const std::string& b : strata::test::backends_under_test()) {
    if (b == "cpu_avx2") return true;
  }
  return false;
}

std::unique_ptr<strata::Engine> hybrid(double percent, bool fast) {
  strata::EngineSettings s = strata::test::test_settings();
  s.max_window_logits = 16;
  s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
  s.experts.cache.percent = percent;
  s.experts.pcie_frac = 0.5;
  s.experts.adapt_swaps = 0;
  s.threads = 2;
  s.graphs = fast;
  auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
  return std::make_unique<strata::Engine>(strata::Model::load(strata::test::tiny_moe_model()), std::move(gpu), s,
                                          strata::test::built_plugins().instantiate("cpu_avx2"));
}

std::vector<TokenId> prompt() {
  std::vector<TokenId> p;
  for (int i = 0; i < 20; ++i) p.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  return p;
}

// The plain continuation, proposed from wherever the sequence is; `wrong_every` > 0 spoils every so many drafts.
class Replay final : public strata::Draft {
 public:
  Replay(std::vector<TokenId> saved, size_t prompt_size, int wrong_every)
      : saved_(std::move(saved)), prompt_size_(prompt_size), wrong_every_(wrong_every) {}
  std::string_view name() const override { return "replay"; }
  std::vector<TokenId> propose(std::span<const TokenId> context, uint32_t n_max) override {
    std::vector<TokenId> out;
    for (size_t at = context.size() - prompt_size_; at < saved_.size() && out.size() < n_max; ++at) {
      TokenId t = saved_[at];
      if (wrong_every_ > 0 && ++count_ % wrong_every_ == 0) t = (t + 1) % 4096;
      out.push_back(t);
    }
    return out;
  }

 private:
  std::vector<TokenId> saved_;
  size_t prompt_size_;
  int wrong_every_;
  int count_ = 0;
};

TEST(HybridSpeculative, WindowsAndDraftsKeepTheOneTokenBytesAtEveryCacheSize) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const std::vector<TokenId> p = prompt();
  for (double percent : {0.0, 25.0, 100.0}) {
    for (bool fast : {true, false}) {
      SCOPED_TRACE(std::to_string(percent) + "% cached, " + (fast ? "fast" : "simple") + " mode");
      auto one = hybrid(percent, fast);
      auto win = hybrid(percent, fast);
      ASSERT_TRUE(win->hybrid());
      // One-token steps: 44 greedy tokens and the logits after each.
      const size_t n_vocab = one->model().hparams().n_vocab;
      std::vector<TokenId> tokens;
      std::vector<std::vector<float>> ref;
      std::span<const float> l = one->feed(0, p);
      for (int i = 0; i < 44; ++i) {
        const TokenId t = strata::sampling::argmax(l);
        tokens.push_back(t);
        l = one->feed(0, std::span<const TokenId>(&t, 1));
        ref.emplace_back(l.begin(), l.end());
      }
      win->feed(0, p);
      size_t at = 0;
      for (uint32_t k = 2; k <= 9; ++k) {
        const std::span<const float> w = win->feed_window(0, std::span<const TokenId>(tokens.data() + at, k));
        for (uint32_t r = 0; r < k; ++r) {
          ASSERT_EQ(std::memcmp(w.data() + r * n_vocab, ref[at + r].data(), n_vocab * sizeof(float)), 0)
              << "window of " << k << ", row " << r;
        }
        at += k;
      }
      if (fast) {
        EXPECT_NE(win->expert_summary().find("fast mode"), std::string::npos) << win->expert_summary();
      }
      // Speculative decoding on the same engine: right drafts, then drafts wrong every third token.
      strata::CompletionOptions o;
      o.max_tokens = 40;
      o.sampling.temperature = 0.0f;
      win->cut(0, 0);
      const strata::CompletionResult plain = strata::complete(*win, 0, p, 0, o);
      for (int wrong : {0, 3}) {
        Replay draft(plain.generated_ids, p.size(), wrong);
        strata::CompletionOptions so = o;
        so.draft = &draft;
        so.draft_n_max = 7;
        win->cut(0, 0);
        const strata::CompletionResult spec = strata::complete(*win, 0, p, 0, so);
        EXPECT_EQ(spec.generated_ids, plain.generated_ids) << "drafts wrong every " << wrong;
        EXPECT_GT(spec.draft.accepted, 0u);
        if (wrong == 0) {
          EXPECT_EQ(spec.draft.accepted, spec.draft.drafted);
        } else {
          EXPECT_LT(spec.draft.accepted, spec.draft.drafted);
        }
      }
    }
  }
}

}  // namespace
