// The hybrid expert path on the CPU: a generated tiny qwen3moe on a stand-in GPU (host memory, cpu_avx2's
// arithmetic) with a VRAM expert cache of a part of the experts, misses read "over PCIe" into staging slots or
// computed by cpu_avx2's expert pool, must give the bytes of the plain cpu_avx2 engine at every position, whatever
// the cache size, the split and the swaps, in simple mode (a host step per MoE layer) and in fast mode (decode
// windows as one program whose WAITs the stand-in's compute thread sits in while the engine places the layers).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/config.hpp"
#include "strata/generate.hpp"
#include <tuple>
#include "tiny_moe_model.hpp"

namespace {

using strata::TokenId;

const std::string& tiny_moe() { return strata::test::tiny_moe_model(); }

bool has_cpu_avx2() {
  for (const std::string& b : strata::test::backends_under_test()) {
    if (b == "cpu_avx2") return true;
  }
  return false;
}

strata::config::ExpertsConfig experts(double percent, std::optional<double> pcie_frac, int swaps,
                                      strata::config::CachePolicy policy = strata::config::CachePolicy::Lfu) {
  strata::config::ExpertsConfig e;
  e.cache.kind = strata::config::CacheSize::Kind::Percent;
  e.cache.percent = percent;
  e.pcie_frac = pcie_frac;
  e.adapt_swaps = swaps;
  e.policy = policy;
  return e;
}

// `peer`: a second stand-in GPU as the peer card (runtime.peer_device); with `layer_split`, the second card of a
// layer split; `slots`: runtime.slots.
std::unique_ptr<strata::Engine> hybrid_engine(const strata::config::ExpertsConfig& e, bool fast = true,
                                              strata::test::StandInGpu** device = nullptr, uint32_t batch = 512,
                                              bool peer = false, uint32_t layer_split = 0, uint32_t slots = 1) {
  strata::EngineSettings s = strata::test::test_settings();
  s.batch = batch;
  s.layer_split = layer_split;
  s.slots = slots;
  s.experts = e;
  s.threads = 2;
  s.graphs = fast;
  auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
  if (device != nullptr) *device = gpu.get();
  std::unique_ptr<strata::Backend> peer_card;
  if (peer) peer_card = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
  return std::make_unique<strata::Engine>(strata::Model::load(tiny_moe()), std::move(gpu), s,
                                          strata::test::built_plugins().instantiate("cpu_avx2"), nullptr,
                                          std::move(peer_card));
}

// A prompt of 20 tokens (one prefill window), then 12 greedy tokens one by one: every logit of every step.
std::vector<float> run(strata::Engine& e) {
  const size_t n_vocab = e.model().hparams().n_vocab;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  std::vector<float> all;
  std::span<const float> logits = e.feed(0, prompt);
  for (int i = 0; i < 12; ++i) {
    all.insert(all.end(), logits.begin(), logits.end());
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = e.feed(0, std::span<const TokenId>(&next, 1));
  }
  all.insert(all.end(), logits.begin(), logits.end());
  EXPECT_EQ(all.size(), 13 * n_vocab);
  return all;
}

const std::vector<float>& plain_cpu() {
  static const std::vector<float> logits = [] {
    auto e = strata::test::open_engine(tiny_moe(), "cpu_avx2");
    return run(*e);
  }();
  return logits;
}

void expect_same_bytes(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  size_t first = got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      first = i;
      break;
    }
  }
  EXPECT_EQ(first, got.size()) << "first differing logit at " << first << ": " << got[first] << " vs " << want[first];
}

struct Split {
  const char* name;
  double percent;
  std::optional<double> pcie_frac;
  int swaps;
  bool fast;
  bool chunks = false;  // experts.prompt_chunks 4
};

class HybridSplit : public ::testing::TestWithParam<Split> {};

TEST_P(HybridSplit, LogitsEqualThePlainCpuEngine) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const Split& s = GetParam();
  strata::config::ExpertsConfig ec = experts(s.percent, s.pcie_frac, s.swaps);
  ec.prompt_chunks = s.chunks ? 4 : 0;
  auto e = hybrid_engine(ec, s.fast);
  ASSERT_TRUE(e->hybrid());
  expect_same_bytes(run(*e), plain_cpu());
  const std::string summary = e->expert_summary();
  EXPECT_NE(summary.find("hit"), std::string::npos) << summary;
  // With experts.prompt_chunks, the 20-token prompt reads its misses over PCIe in chunks, the device computing each
  // as it lands; off (the default), they all land first.
  if (s.percent < 100) {
    EXPECT_EQ(summary.find("prompts: a layer's PCIe experts in up to 4 chunks") != std::string::npos, s.chunks)
        << summary;
    EXPECT_EQ(summary.find("layers read their PCIe experts in chunks") != std::string::npos, s.chunks) << summary;
  }
  // The pool's own roofline where it computed experts (every miss with pcie_frac 0), none where it did not; the host
  // read rate to compare with is measured only with pcie_frac auto. (The set-up line names the pool mid-line.)
  const bool pool_ran = s.percent < 100 && s.pcie_frac == 0.0;
  const bool pool_idle = s.percent >= 100 || s.pcie_frac == 1.0;
  if (pool_ran) {
    EXPECT_NE(summary.find("\nCPU pool: "), std::string::npos) << summary;
    EXPECT_NE(summary.find(" GB/s (no host read rate to compare"), std::string::npos) << summary;
    e->reset_expert_counts();
    EXPECT_EQ(e->expert_summary().find("\nCPU pool: "), std::string::npos) << "no window since the reset";
  }
  if (pool_idle) {
    EXPECT_EQ(summary.find("\nCPU pool: "), std::string::npos) << summary;
  }
  // The 12 one-token windows run as programs in fast mode; the 20-token prompt takes simple mode's steps.
  if (s.fast) {
    EXPECT_NE(summary.find("fast mode: 12 windows as one device program"), std::string::npos) << summary;
  } else {
    EXPECT_EQ(summary.find("fast mode:"), std::string::npos) << summary;
    EXPECT_NE(summary.find("simple mode (a host step per MoE layer)"), std::string::npos) << summary;
  }
}

INSTANTIATE_TEST_SUITE_P(Hybrid, HybridSplit,
                         ::testing::Values(Split{"all_misses_over_pcie", 25, 1.0, 0, true},
                                           Split{"all_misses_on_the_pool", 25, 0.0, 0, true},
                                           Split{"half_and_half_with_swaps", 25, 0.5, 4, true},
                                           Split{"empty_cache", 0, 0.5, 0, true},
                                           Split{"every_expert_cached", 100, 0.5, 0, true},
                                           Split{"simple_all_misses_over_pcie", 25, 1.0, 0, false},
                                           Split{"simple_all_misses_on_the_pool", 25, 0.0, 0, false},
                                           Split{"simple_half_and_half_with_swaps", 25, 0.5, 4, false},
                                           Split{"simple_empty_cache", 0, 0.5, 0, false},
                                           Split{"prompt_chunks_half_and_half_with_swaps", 25, 0.5, 4, true, true},
                                           Split{"prompt_chunks_empty_cache", 0, 0.5, 0, false, true}),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace

namespace {

// experts.huge_pages false: the file's expert pages marked for 4 KiB pages, the same bytes (pages never change a value).
TEST(HybridSummary, SmallPagesGiveTheSameBytes) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::config::ExpertsConfig e = experts(25, 0.5, 0);
  e.huge_pages = false;
  auto engine = hybrid_engine(e);
  expect_same_bytes(run(*engine), plain_cpu());
  const std::string summary = engine->expert_summary();
  EXPECT_NE(summary.find("; huge pages off (experts.huge_pages false): "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("; huge pages: "), std::string::npos) << summary;
}

// pcie_frac auto: the link probe, the host read and device copy measures run at start (on the stand-in: memcpy), the
// share comes from them, and the summary ends with the roofline they give.
TEST(HybridSummary, AutoShareProbesTheLinkAndPrintsTheRoofline) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  auto e = hybrid_engine(experts(25, std::nullopt, 0));
  expect_same_bytes(run(*e), plain_cpu());
  const std::string summary = e->expert_summary();
  EXPECT_NE(summary.find("roofline:"), std::string::npos) << summary;
  EXPECT_NE(summary.find("tokens/s at most"), std::string::npos) << summary;
  // The prompt ran in simple mode, the decode steps in fast mode: both have their line.
  EXPECT_NE(summary.find("simple mode: MoE stages on the device"), std::string::npos) << summary;
  EXPECT_NE(summary.find("fast mode: 12 windows as one device program"), std::string::npos) << summary;
  EXPECT_NE(summary.find("host placement"), std::string::npos) << summary;
  // Per MoE layer: the device alone and the host's part of a program, and the placement's parts.
  EXPECT_NE(summary.find("fast mode per MoE layer: the device alone "), std::string::npos) << summary;
  EXPECT_NE(summary.find("a MoE layer (planning "), std::string::npos) << summary;
  EXPECT_EQ(summary.rfind("hybrid set-up: experts in RAM: ", 0), 0u) << summary;
  // The file as the host copy: its 2 MiB pages asked for (experts.huge_pages), and what the page tables map so.
  EXPECT_NE(summary.find("; huge pages: "), std::string::npos) << summary;
  EXPECT_NE(summary.find(" of the file's mappings in 2 MiB page-table entries"), std::string::npos) << summary;
  EXPECT_NE(summary.find("from the link probe"), std::string::npos) << summary;
  // The pool timed on the model's experts at start, a positive rate (the share takes the slower of it and the host
  // read).
  const size_t timed = summary.find("the pool on this model's experts ");
  ASSERT_NE(timed, std::string::npos) << summary;
  EXPECT_GT(std::atof(summary.c_str() + timed + std::strlen("the pool on this model's experts ")), 0.0) << summary;
  // The set-up line says how many threads the pool computes with and why (expert_pool 1.2's describe).
  EXPECT_NE(summary.find("CPU pool: cpu_avx2 ("), std::string::npos) << summary;
  EXPECT_NE(summary.find("+ the calling thread)"), std::string::npos) << summary;
  // The prompt path's cut-over, measured on the pool and the link: a window size from 1 to 8.
  const size_t cut = summary.find("prompt path: windows of more than ");
  ASSERT_NE(cut, std::string::npos) << summary;
  const int n = std::atoi(summary.c_str() + cut + std::strlen("prompt path: windows of more than "));
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 8);
  EXPECT_NE(summary.find("a PCIe read"), std::string::npos) << summary;
  // Where the probe's share left work to the pool, its roofline compares with the host read rate the probe measured.
  if (const size_t pool = summary.find("\nCPU pool: "); pool != std::string::npos) {
    EXPECT_NE(summary.find("of the host read rate ", pool), std::string::npos) << summary;
  }
  EXPECT_EQ(summary.find("of the roofline"), std::string::npos) << "no rate given";
  EXPECT_NE(e->expert_summary(10.0).find("decode 10.00 tokens/s = "), std::string::npos);
  e->reset_expert_counts();
  EXPECT_EQ(e->expert_summary().find("roofline:"), std::string::npos) << "no window since the reset";
}

}  // namespace

namespace {

// Fast mode when enqueueing waits for the device: the program's first WAIT holds the device until the placer raises
// the flag, so placing must not be the enqueueing thread's job. The first window is a decode window (a fresh
// engine, as `strata bench` starts), then the usual run; the bytes are the plain engine's.
TEST(HybridFastMode, EnqueueThatWaitsForTheDevice) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::test::StandInGpu* device = nullptr;
  auto e = hybrid_engine(experts(25, 0.5, 0), true, &device);
  device->set_blocking_enqueue(true);
  const TokenId first = 7;
  (void)e->feed(0, std::span<const TokenId>(&first, 1));
  e->cut(0, 0);
  expect_same_bytes(run(*e), plain_cpu());
  EXPECT_NE(e->expert_summary().find("fast mode: 13 windows"), std::string::npos) << e->expert_summary();
}

// A device that fails inside a program: the error reaches the caller (no hang waiting for flags that never come),
// and the engine's placer is free for the next window.
TEST(HybridFastMode, DeviceFailureInsideAProgramIsReported) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::test::StandInGpu* device = nullptr;
  auto e = hybrid_engine(experts(25, 0.5, 0), true, &device);
  const TokenId first = 7;
  device->fail_lists_with(STRATA_OP_WAIT);
  try {
    (void)e->feed(0, std::span<const TokenId>(&first, 1));
    ADD_FAILURE() << "the injected device failure was not reported";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("injected"), std::string::npos) << err.what();
  }
  device->fail_lists_with(0);
  const std::span<const float> logits = e->feed(0, std::span<const TokenId>(&first, 1));
  EXPECT_EQ(logits.size(), e->model().hparams().n_vocab);
}

// A device without MOE_ROUTED's ready-flagged form for the model's expert types (cuda's decode kernels have no
// IQ2_XS, so qwen3-235b-a22b at iq2_xs failed at its first decode window): the windows the pool serves run in simple
// mode instead, with the plain engine's bytes.
TEST(HybridFastMode, ADeviceWithoutTheFlaggedFormRunsThoseWindowsInSimpleMode) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::test::StandInGpu* device = nullptr;
  auto e = hybrid_engine(experts(25, 0.5, 0), true, &device);
  device->lack_flagged_moe_routed(true);
  expect_same_bytes(run(*e), plain_cpu());
  EXPECT_EQ(e->expert_summary().find("fast mode: 13 windows"), std::string::npos) << e->expert_summary();
}

}  // namespace

namespace {

// Windows of several tokens as programs: the 20-token prompt in windows of 5, in fast mode and in simple mode. The
// pool takes them when the measured cut-over is 5 or more, PCIe reads otherwise; the bytes are the same either way.
TEST(HybridFastMode, MultiTokenWindowsEqualSimpleMode) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  auto fast = hybrid_engine(experts(25, 0.5, 0), true, nullptr, 5);
  auto simple = hybrid_engine(experts(25, 0.5, 0), false, nullptr, 5);
  expect_same_bytes(run(*fast), run(*simple));
  EXPECT_NE(fast->expert_summary().find("fast mode: 16 windows"), std::string::npos) << fast->expert_summary();
}

}  // namespace

namespace {

// experts.prompt_chunks: off (a layer's misses all land before its experts are computed, staging for a whole
// window), one chunk, and more chunks than the tiny model has misses (one expert a chunk): the plain engine's bytes.
TEST(HybridPromptChunks, OffAndOneExpertAChunkGiveThePlainBytes) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  for (int chunks : {0, 1, 8}) {
    strata::config::ExpertsConfig e = experts(25, 1.0, 0);
    e.prompt_chunks = chunks;
    auto engine = hybrid_engine(e, false);
    expect_same_bytes(run(*engine), plain_cpu());
    const std::string summary = engine->expert_summary();
    const bool chunked = summary.find("layers read their PCIe experts in chunks") != std::string::npos;
    EXPECT_EQ(chunked, chunks > 0) << "prompt_chunks " << chunks << ":\n" << summary;
  }
}

}  // namespace

namespace {

// A prompt of 20 tokens, then `steps` greedy tokens: the ids.
std::vector<TokenId> greedy_ids(strata::Engine& e, int steps) {
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  std::vector<TokenId> ids;
  std::span<const float> logits = e.feed(0, prompt);
  for (int i = 0; i < steps; ++i) {
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ids.push_back(next);
    logits = e.feed(0, std::span<const TokenId>(&next, 1));
  }
  return ids;
}

// plugins/pcie_balance in the hybrid engine: fast mode hands it each decode window's per-layer samples; once its
// fits are warm it picks each layer's PCIe count. The split changes, the ids do not; the summary has its line.
TEST(pcie_balance_engine, PicksTheSplitAndKeepsThePlainIds) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const int steps = 48;
  std::vector<TokenId> want;
  {
    auto plain = strata::test::open_engine(tiny_moe(), "cpu_avx2");
    want = greedy_ids(*plain, steps);
  }
  strata::EngineSettings s = strata::test::test_settings();
  // The warm-up share 0.25, not the link probe's: a layer here misses one or two experts a token, and a probe share
  // near 0.75 (a slow pool, as under the sanitizers) rounds every such layer to PCIe alone, so the pool's fit never
  // saw a sample and never warmed.
  s.experts = experts(25, 0.25, 0);
  s.threads = 2;
  auto e = std::make_unique<strata::Engine>(
      strata::Model::load(tiny_moe()), std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")),
      s, strata::test::built_plugins().instantiate("cpu_avx2"),
      strata::test::built_plugins().instantiate("pcie_balance", {"explore_every=8"}));
  EXPECT_EQ(greedy_ids(*e, steps), want);
  const std::string summary = e->expert_summary();
  if (std::getenv("STRATA_TEST_SHOW_SUMMARY") != nullptr) std::printf("%s", summary.c_str());
  EXPECT_NE(summary.find("PCIe share from pcie_balance"), std::string::npos) << summary;
  EXPECT_NE(summary.find("pcie_balance: the pool "), std::string::npos) << summary;
  EXPECT_NE(summary.find("misses a layer on average"), std::string::npos) << "the fits never got warm:\n" << summary;
}

}  // namespace

namespace {

// runtime.peer_device on stand-in GPUs: the cached experts are dealt between this card and the peer (every second
// rank with peer_hot 0.5; all the hottest first with 1), the peer computes its experts' rows in decode windows (in
// programs and in simple mode) and prompt windows, and every logit is the plain engine's byte for byte, whatever the
// share of the misses read over PCIe. The summary says how busy the peer was.
struct PeerCase {
  const char* name;
  double percent;
  double pcie_frac;
  double peer_hot;
  bool fast;
  int swaps = 0;
};

class HybridPeer : public ::testing::TestWithParam<PeerCase> {};

TEST_P(HybridPeer, LogitsEqualThePlainCpuEngine) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const PeerCase& c = GetParam();
  strata::config::ExpertsConfig ec = experts(c.percent, c.pcie_frac, c.swaps);
  ec.peer_hot = c.peer_hot;
  auto e = hybrid_engine(ec, c.fast, nullptr, 512, /*peer=*/true);
  ASSERT_TRUE(e->hybrid());
  expect_same_bytes(run(*e), plain_cpu());
  const std::string summary = e->expert_summary();
  EXPECT_NE(summary.find("peer card stand-in GPU over cpu_avx2"), std::string::npos) << summary;
  const size_t line = summary.find("peer card: ");
  ASSERT_NE(line, std::string::npos) << summary;
  // Both the prompt and the decode steps gave the peer work.
  EXPECT_GT(std::atoll(summary.c_str() + line + std::strlen("peer card: ")), 12) << summary;
  EXPECT_NE(summary.find("% of the windows' time"), std::string::npos) << summary;
}

INSTANTIATE_TEST_SUITE_P(Hybrid, HybridPeer,
                         ::testing::Values(PeerCase{"half_dealt_misses_on_the_pool", 25, 0.0, 0.5, true},
                                           PeerCase{"half_dealt_half_over_pcie", 25, 0.5, 0.5, true},
                                           PeerCase{"half_dealt_misses_over_pcie", 25, 1.0, 0.5, true},
                                           PeerCase{"hottest_on_the_peer", 25, 0.5, 1.0, true},
                                           PeerCase{"simple_half_dealt", 25, 0.5, 0.5, false},
                                           PeerCase{"simple_hottest_on_the_peer", 25, 0.0, 1.0, false},
                                           PeerCase{"with_swaps", 25, 0.5, 0.5, true, 4}),
                         [](const auto& p) { return std::string(p.param.name); });

// PEER_DETACH and PEER_ATTACH between windows (strata engine's control lines): detached, the peer's slots are given
// back and its experts are read over PCIe or computed by the pool; attached again, they are refilled from the
// arena and the peer computes again. POOL_HOLD runs the pool on fewer workers. The logits never change. Detaching
// twice, or an engine without a peer or a pool, is refused by name.
TEST(HybridPeerSetup, DetachAndAttachBetweenWindowsKeepTheBytes) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::config::ExpertsConfig ec = experts(25, 0.5, 0);
  ec.peer_hot = 0.5;
  auto e = hybrid_engine(ec, true, nullptr, 512, /*peer=*/true);
  const size_t n_vocab = e->model().hparams().n_vocab;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<TokenId>((i * 197 + 3) % 4096));
  std::vector<float> all;
  std::span<const float> logits = e->feed(0, prompt);
  const auto peer_experts = [&] {
    const std::string summary = e->expert_summary();
    const size_t at = summary.find("peer card: ");
    return at == std::string::npos ? -1LL : std::atoll(summary.c_str() + at + std::strlen("peer card: "));
  };
  long long before = 0;
  for (int i = 0; i < 12; ++i) {
    all.insert(all.end(), logits.begin(), logits.end());
    if (i == 3) {
      EXPECT_NE(e->detach_peer().find("slots ("), std::string::npos);
      before = peer_experts();
      EXPECT_THROW(e->detach_peer(), strata::Error);
    }
    if (i == 8) {
      EXPECT_EQ(peer_experts(), before) << "the detached peer computed nothing";
      EXPECT_NE(e->attach_peer().find("refilled from the host arena"), std::string::npos);
      EXPECT_THROW(e->attach_peer(), strata::Error);
    }
    const auto next = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    logits = e->feed(0, std::span<const TokenId>(&next, 1));
  }
  all.insert(all.end(), logits.begin(), logits.end());
  ASSERT_EQ(all.size(), 13 * n_vocab);
  expect_same_bytes(all, plain_cpu());
  EXPECT_GT(peer_experts(), before) << "attached again, the peer computed";
  // POOL_HOLD: the pool on fewer workers from the next window on, and all of them again; the bytes stay.
  EXPECT_NE(e->hold_pool(1).find("uses 1 workers"), std::string::npos);
  e->cut(0, 0);
  const std::vector<float> held = run(*e);
  EXPECT_NE(e->hold_pool(0).find("workers again"), std::string::npos);
  expect_same_bytes(held, plain_cpu());
  auto no_peer = hybrid_engine(ec, true);
  auto cpu = strata::test::open_engine(tiny_moe(), "cpu_avx2");
  EXPECT_THROW((void)cpu->hold_pool(2), strata::Error) << "no hybrid path, no pool to hold";
  try {
    (void)no_peer->detach_peer();
    ADD_FAILURE() << "an engine without a peer card detached one";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("this engine has no peer card"), std::string::npos) << err.what();
  }
}

// A peer card on a backend without device memory is refused by name.
TEST(HybridPeerSetup, APeerThatIsNotAGpuIsRefused) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::EngineSettings s = strata::test::test_settings();
  s.experts = experts(25, 0.5, 0);
  s.threads = 2;
  try {
    strata::Engine e(strata::Model::load(tiny_moe()),
                     std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
                     strata::test::built_plugins().instantiate("cpu_avx2"), nullptr,
                     strata::test::open_backend("cpu_avx2"));
    FAIL() << "a CPU backend was taken as the peer card";
  } catch (const strata::Error& err) {
    EXPECT_NE(std::string(err.what()).find("a peer card needs a GPU backend"), std::string::npos) << err.what();
  }
}

}  // namespace

namespace {

// runtime.layer_split on stand-in GPUs: layers [0, K) on the first card, the rest on the second, each with its own
// weights, KV cache and (on the hybrid path) its own layers' expert cache; the residual stream crosses over once a
// window. Every logit is the plain engine's, with every weight on the cards or on the hybrid path (programs and
// simple mode), at each split point of the 4-layer model.
struct SplitCase {
  const char* name;
  uint32_t layer_split;
  std::optional<double> percent;  // nullopt: experts.cache auto (every weight fits on the stand-ins)
  bool fast;
};

class LayerSplit : public ::testing::TestWithParam<SplitCase> {};

TEST_P(LayerSplit, LogitsEqualThePlainCpuEngine) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const SplitCase& c = GetParam();
  strata::config::ExpertsConfig ec = experts(c.percent.value_or(25), 0.5, 0);
  if (!c.percent) ec.cache.kind = strata::config::CacheSize::Kind::Auto;
  auto e = hybrid_engine(ec, c.fast, nullptr, 512, /*peer=*/true, c.layer_split);
  EXPECT_EQ(e->hybrid(), c.percent.has_value());
  expect_same_bytes(run(*e), plain_cpu());
  if (c.percent) {
    const std::string summary = e->expert_summary();
    EXPECT_NE(summary.find("second card (layers " + std::to_string(c.layer_split) + " and up):"), std::string::npos)
        << summary;
    EXPECT_NE(summary.find("the first card's host copy"), std::string::npos) << summary;
  }
}

INSTANTIATE_TEST_SUITE_P(Hybrid, LayerSplit,
                         ::testing::Values(SplitCase{"all_weights_split_at_1", 1, std::nullopt, true},
                                           SplitCase{"all_weights_split_at_3", 3, std::nullopt, true},
                                           SplitCase{"hybrid_split_at_2", 2, 25, true},
                                           SplitCase{"hybrid_split_at_1", 1, 25, true},
                                           SplitCase{"simple_hybrid_split_at_2", 2, 25, false}),
                         [](const auto& p) { return std::string(p.param.name); });

// Two sequences at once on a layer split (runtime.slots 2): each gets the ids it gets alone.
TEST(LayerSplitSlots, TwoSequencesTogetherEqualEachAlone) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  auto e = hybrid_engine(experts(25, 0.5, 0), true, nullptr, 512, /*peer=*/true, 2, /*slots=*/2);
  std::vector<strata::SequenceRequest> reqs(2);
  for (uint32_t i = 0; i < 2; ++i) {
    reqs[i].slot = i;
    for (int t = 0; t < 9 + 4 * static_cast<int>(i); ++t) reqs[i].prompt.push_back(static_cast<TokenId>((t * 131 + 7 * i + 5) % 4096));
    reqs[i].options.max_tokens = 10 + 3 * static_cast<int>(i);
    reqs[i].options.sampling.temperature = 0;
  }
  std::vector<strata::CompletionResult> alone;
  for (const strata::SequenceRequest& r : reqs) alone.push_back(strata::complete(*e, 0, r.prompt, 0, r.options));
  const std::vector<strata::CompletionResult> together = strata::complete_together(*e, reqs);
  ASSERT_EQ(together.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_FALSE(alone[i].generated_ids.empty());
    EXPECT_EQ(together[i].generated_ids, alone[i].generated_ids) << "sequence " << i;
  }
  // And one sequence equals the plain CPU engine's.
  auto plain = strata::test::open_engine(tiny_moe(), "cpu_avx2");
  EXPECT_EQ(strata::complete(*plain, 0, reqs[1].prompt, 0, reqs[1].options).generated_ids, alone[1].generated_ids);
}

// Bad splits are refused by name: no second card, or no layer left for it.
TEST(LayerSplitSetup, RefusesASplitWithoutASecondCardOrLayers) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  for (const auto& [split, peer, want] : std::vector<std::tuple<uint32_t, bool, std::string>>{
           {2, false, "needs a GPU backend (cuda, hip) and the second card in runtime.peer_device"},
           {4, true, "leaves no layer for the second card: this model has 4 layers; give 1 to 3"}}) {
    try {
      (void)hybrid_engine(experts(25, 0.5, 0), true, nullptr, 512, peer, split);
      ADD_FAILURE() << "layer_split " << split << " was taken";
    } catch (const strata::Error& err) {
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  }
}

}  // namespace
