// Sampling: the cuts keep exactly the right candidates on small logit vectors, seeded draws follow the
// distribution they should, the same seed repeats itself, and stop strings hold back only what may still stop.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "engine_backends.hpp"
#include "strata/generate.hpp"
#include "strata/sampling.hpp"

namespace {

using strata::Sampler;
using strata::SamplingParams;
using strata::TokenId;
namespace smp = strata::sampling;

std::vector<TokenId> ids_of(const std::vector<smp::Candidate>& c) {
  std::vector<TokenId> out;
  for (const smp::Candidate& x : c) out.push_back(x.id);
  return out;
}

// Logits whose softmax is exactly (to rounding) 0.5, 0.3, 0.15, 0.05, in a shuffled order of ids.
std::vector<float> four_way() {
  return {std::log(0.15f), std::log(0.5f), std::log(0.05f), std::log(0.3f)};
}

TEST(Sampling, ArgmaxTakesTheFirstLargest) {
  EXPECT_EQ(smp::argmax(std::vector<float>{1, 5, 3, 5, 2}), 1);
  EXPECT_EQ(smp::argmax(std::vector<float>{-1, -1}), 0);
}

TEST(Sampling, TopKKeepsTheKLargestTiesByLowerId) {
  std::vector<smp::Candidate> c = smp::sorted_candidates(std::vector<float>{1, 5, 3, 5, 2});
  EXPECT_EQ(ids_of(c), (std::vector<TokenId>{1, 3, 2, 4, 0}));
  smp::top_k(c, 2);
  EXPECT_EQ(ids_of(c), (std::vector<TokenId>{1, 3}));
  smp::top_k(c, 0);  // off
  EXPECT_EQ(c.size(), 2u);
}

TEST(Sampling, TopPKeepsTheSmallestSetReachingP) {
  const std::map<float, std::vector<TokenId>> want = {
      {0.45f, {1}}, {0.75f, {1, 3}}, {0.9f, {1, 3, 0}}, {0.99f, {1, 3, 0, 2}}, {1.0f, {1, 3, 0, 2}}};
  for (const auto& [p, ids] : want) {
    std::vector<smp::Candidate> c = smp::sorted_candidates(four_way());
    smp::softmax(c, 1.0f);
    smp::top_p(c, p);
    EXPECT_EQ(ids_of(c), ids) << "top_p " << p;
    double sum = 0;
    for (const auto& x : c) sum += x.p;
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(Sampling, MinPDropsTokensBelowAShareOfTheLikeliest) {
  const std::map<float, std::vector<TokenId>> want = {
      {0.0f, {1, 3, 0, 2}}, {0.25f, {1, 3, 0}}, {0.5f, {1, 3}}, {0.7f, {1}}};
  for (const auto& [p, ids] : want) {
    std::vector<smp::Candidate> c = smp::sorted_candidates(four_way());
    smp::softmax(c, 1.0f);
    smp::min_p(c, p);
    EXPECT_EQ(ids_of(c), ids) << "min_p " << p;
  }
}

TEST(Sampling, RepeatPenaltyOnRecentDistinctTokens) {
  std::vector<float> l = {2, -2, 1, 4};
  const std::vector<TokenId> history = {0, 1, 0, 0};
  smp::apply_repeat_penalty(l, history, 2.0f, 64);
  EXPECT_EQ(l, (std::vector<float>{1, -4, 1, 4}));  // token 0 once, however often it occurred
  std::vector<float> m = {2, -2, 1, 4};
  smp::apply_repeat_penalty(m, std::vector<TokenId>{3, 1, 2}, 2.0f, 1);  // only the last token
  EXPECT_EQ(m, (std::vector<float>{2, -2, 0.5f, 4}));
}

// The frequencies of `n` tokens drawn by one seeded sampler.
std::vector<double> frequencies(const SamplingParams& p, const std::vector<float>& logits, int n) {
  std::vector<double> f(logits.size(), 0.0);
  Sampler s(p);
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(s.sample(logits, {}))] += 1.0 / n;
  return f;
}

void expect_distribution(const std::vector<double>& got, const std::vector<double>& want, int n) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double sigma = std::sqrt(want[i] * (1 - want[i]) / n);
    EXPECT_NEAR(got[i], want[i], 4 * sigma + 1e-12) << "token " << i;
  }
}

TEST(Sampling, SeededDrawsFollowTheDistribution) {
  const int n = 40000;
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 7;
  expect_distribution(frequencies(p, four_way(), n), {0.15, 0.5, 0.05, 0.3}, n);
  // Temperature 0.5 squares the probabilities: 0.0225, 0.25, 0.0025, 0.09 over 0.365.
  p.temperature = 0.5f;
  expect_distribution(frequencies(p, four_way(), n), {0.0225 / 0.365, 0.25 / 0.365, 0.0025 / 0.365, 0.09 / 0.365}, n);
  // top-k 2 then temperature 1: 0.5 : 0.3.
  p.temperature = 1.0f;
  p.top_k = 2;
  expect_distribution(frequencies(p, four_way(), n), {0.0, 0.625, 0.0, 0.375}, n);
  // min-p 0.25 keeps three: 0.5, 0.3, 0.15 over 0.95.
  p.top_k = 0;
  p.min_p = 0.25f;
  expect_distribution(frequencies(p, four_way(), n), {0.15 / 0.95, 0.5 / 0.95, 0.0, 0.3 / 0.95}, n);
}

TEST(Sampling, SameSeedSameTokensGreedyIgnoresTheSeed) {
  SamplingParams p;
  p.temperature = 0.8f;
  std::vector<TokenId> a, b, c;
  Sampler s1(p), s2(p);
  p.seed = 2;
  Sampler s3(p);
  for (int i = 0; i < 64; ++i) {
    a.push_back(s1.sample(four_way(), {}));
    b.push_back(s2.sample(four_way(), {}));
    c.push_back(s3.sample(four_way(), {}));
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  SamplingParams greedy;
  greedy.seed = 99;
  EXPECT_EQ(Sampler(greedy).sample(four_way(), {}), 1);
}

TEST(Sampling, LogitBiasAddsToTheLogit) {
  std::vector<float> l = {1.0f, 2.0f, 3.0f};
  const std::vector<std::pair<TokenId, float>> bias = {{0, 0.5f}, {2, -100.0f}, {7, 1.0f}};  // 7: outside, skipped
  smp::apply_logit_bias(l, bias);
  EXPECT_EQ(l, (std::vector<float>{1.5f, 2.0f, -97.0f}));
}

TEST(Sampling, FrequencyAndPresencePenaltiesAsOpenAIWritesThem) {
  // logit -= count * frequency + (count > 0) * presence
  std::vector<float> l = {1.0f, 1.0f, 1.0f, 1.0f};
  smp::apply_frequency_presence(l, {{1, 1}, {2, 3}}, 0.5f, 0.25f);
  EXPECT_EQ(l, (std::vector<float>{1.0f, 1.0f - (0.5f + 0.25f), 1.0f - (3.0f * 0.5f + 0.25f), 1.0f}));
  std::vector<float> negative = {0.0f, 0.0f};
  smp::apply_frequency_presence(negative, {{0, 2}}, -1.0f, -2.0f);  // negative values favour repeats
  EXPECT_EQ(negative, (std::vector<float>{4.0f, 0.0f}));
}

TEST(Sampling, BiasAppliesToGreedyToo) {
  SamplingParams p;  // temperature 0
  p.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Sampler(p).sample(four_way(), {}), 3) << "the likeliest is banned: the second";
  p.logit_bias = {{2, 100.0f}};
  EXPECT_EQ(Sampler(p).sample(four_way(), {}), 2) << "+100 forces the least likely";
}

TEST(Sampling, PenaltiesCountTheTokensTheSamplerDrew) {
  // Greedy on fixed logits: without a penalty the same token forever; with a frequency penalty of 2 the
  // likeliest (log 0.5) falls below the second (log 0.3) after one draw, and so on.
  SamplingParams p;
  Sampler plain(p);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(plain.sample(four_way(), {}), 1);
  p.frequency_penalty = 2.0f;
  Sampler freq(p);
  std::vector<TokenId> got;
  for (int i = 0; i < 4; ++i) got.push_back(freq.sample(four_way(), {}));
  EXPECT_EQ(got, (std::vector<TokenId>{1, 3, 0, 1}));
  // The prompt (history) does not count: only what this sampler returned.
  SamplingParams q;
  q.presence_penalty = 2.0f;
  Sampler presence(q);
  const std::vector<TokenId> prompt = {1, 1, 1};
  EXPECT_EQ(presence.sample(four_way(), prompt), 1);
  EXPECT_EQ(presence.sample(four_way(), prompt), 3);
  EXPECT_EQ(presence.sample(four_way(), prompt), 0);
}

TEST(Sampling, ForcedIdsComeFirstThenSampling) {
  SamplingParams p;
  p.forced = {2, 0};
  Sampler s(p);
  EXPECT_EQ(s.sample(four_way(), {}), 2);
  EXPECT_EQ(s.sample(four_way(), {}), 0);
  EXPECT_EQ(s.sample(four_way(), {}), 1);
}

TEST(StopStrings, HoldsBackOnlyPossibleStarts) {
  strata::StopStrings s({"world", "\n\n"});
  EXPECT_EQ(s.push("Hello wor"), "Hello ");
  EXPECT_EQ(s.push("m"), "worm");
  EXPECT_EQ(s.push(" and w"), " and ");
  EXPECT_EQ(s.push("orld!"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("more"), "");

  strata::StopStrings t({"\n\n"});
  EXPECT_EQ(t.push("a\n"), "a");
  EXPECT_EQ(t.finish(), "\n");
  EXPECT_FALSE(t.stopped());

  strata::StopStrings none({});
  EXPECT_EQ(none.push("anything"), "anything");
}

TEST(StopStrings, GenerationStopsBeforeTheStopString) {
  auto e = strata::test::open_engine(strata::test::models_dir() + "/stories260K.gguf", "reference");
  strata::GenerateOptions opt;
  opt.n_predict = 64;
  opt.stop = {"Lily"};
  std::string streamed;
  const strata::GenerateResult r =
      strata::generate(*e, 0, "Once upon a time", opt, [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.stop_reason, "stop string");
  EXPECT_EQ(r.text, ", there was a little girl named ");
  EXPECT_EQ(streamed, r.text);
}

}  // namespace
