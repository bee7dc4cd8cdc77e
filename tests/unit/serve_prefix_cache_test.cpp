// The slot choice of the prompt cache: the longest shared prefix wins, short ones do not evict, ties and misses go
// to the least recently used slot (never used first); and complete() on a reused prefix gives what a fresh slot
// gives, feeding only the new tokens.
#include <gtest/gtest.h>

#include <vector>

#include "engine_backends.hpp"
#include "strata/generate.hpp"
#include "strata/prefix_cache.hpp"

namespace {

using strata::PrefixCache;
using strata::TokenId;

std::vector<TokenId> seq(std::initializer_list<TokenId> ids) { return ids; }

TEST(ServePrefixCache, CommonPrefix) {
  EXPECT_EQ(strata::common_prefix(seq({1, 2, 3}), seq({1, 2, 4})), 2u);
  EXPECT_EQ(strata::common_prefix(seq({1, 2}), seq({1, 2, 3})), 2u);
  EXPECT_EQ(strata::common_prefix(seq({}), seq({1})), 0u);
  EXPECT_EQ(strata::common_prefix(seq({5}), seq({1})), 0u);
}

TEST(ServePrefixCache, EmptySlotsAreTakenInOrder) {
  PrefixCache cache(3, 2);
  const auto first = cache.choose(seq({1, 2, 3}));
  EXPECT_EQ(first.slot, 0u);
  EXPECT_EQ(first.reuse, 0u);
  cache.record(first.slot, seq({1, 2, 3, 9}));
  const auto second = cache.choose(seq({7, 7, 7}));
  EXPECT_EQ(second.slot, 1u);  // no match: the never used slot, not slot 0's conversation
  cache.record(second.slot, seq({7, 7, 7}));
  EXPECT_EQ(cache.choose(seq({8})).slot, 2u);
}

TEST(ServePrefixCache, LongestPrefixWins) {
  PrefixCache cache(3, 2);
  cache.record(0, seq({1, 2, 3, 4, 5}));
  cache.record(1, seq({1, 2, 3, 9}));
  cache.record(2, seq({1, 2}));
  const auto c = cache.choose(seq({1, 2, 3, 4, 6}));
  EXPECT_EQ(c.slot, 0u);
  EXPECT_EQ(c.reuse, 4u);
  // The whole slot is a prefix of the next turn.
  const auto next = cache.choose(seq({1, 2, 3, 9, 10, 11}));
  EXPECT_EQ(next.slot, 1u);
  EXPECT_EQ(next.reuse, 4u);
}

TEST(ServePrefixCache, ShortPrefixesDoNotCountAndTheLeastRecentlyUsedIsTaken) {
  PrefixCache cache(2, 3);
  cache.record(0, seq({1, 2, 3, 4}));  // older
  cache.record(1, seq({1, 5, 6}));     // newer
  // Shares 1 token with slot 1 (below min_prefix) and none with slot 0: the LRU slot, 0, whatever it shares.
  const auto c = cache.choose(seq({1, 5, 8}));
  EXPECT_EQ(c.slot, 0u);
  EXPECT_EQ(c.reuse, 1u);
  cache.record(0, seq({1, 5, 8}));
  EXPECT_EQ(cache.choose(seq({9})).slot, 1u);  // slot 1 is now the older
}

TEST(ServePrefixCache, TiesGoToTheLeastRecentlyUsed) {
  PrefixCache cache(2, 1);
  cache.record(1, seq({1, 2, 3, 7}));
  cache.record(0, seq({1, 2, 3, 8}));
  EXPECT_EQ(cache.choose(seq({1, 2, 3, 9})).slot, 1u);
}

TEST(ServePrefixCache, ForgetEmptiesASlot) {
  PrefixCache cache(1, 1);
  cache.record(0, seq({1, 2, 3}));
  cache.forget(0);
  EXPECT_EQ(cache.choose(seq({1, 2, 3})).reuse, 0u);
  EXPECT_THROW(PrefixCache(0), strata::Error);
}

// On stories260K: a second turn that extends the first reuses the slot's prefix, feeds only the rest, and
// generates exactly what a fresh slot generates from the whole prompt.
TEST(ServePrefixCache, ReusedPrefixGivesTheFreshSlotsTokens) {
  strata::EngineSettings s;
  s.context = 256;
  s.slots = 2;
  strata::Engine engine(strata::Model::load(strata::test::models_dir() + "/stories260K.gguf"),
                        strata::make_reference_backend(), s);
  const strata::Tokenizer& tok = engine.model().tokenizer();
  strata::CompletionOptions o;
  o.max_tokens = 12;
  const std::vector<TokenId> turn1 = tok.encode("Once upon a time", {.add_eos = false});
  const strata::CompletionResult first = strata::complete(engine, 0, turn1, 0, o);
  std::vector<TokenId> turn2 = turn1;
  turn2.insert(turn2.end(), first.generated_ids.begin(), first.generated_ids.end());
  const std::vector<TokenId> more = tok.encode(" The cat", {.add_bos = false, .add_eos = false});
  turn2.insert(turn2.end(), more.begin(), more.end());

  std::vector<std::string> pieces;
  const strata::CompletionResult reused =
      strata::complete(engine, 0, turn2, engine.position(0), o, [&](const strata::GeneratedToken& t) {
        pieces.push_back(t.text);
        return true;
      });
  EXPECT_EQ(reused.reused_tokens, turn1.size() + first.generated_ids.size() - 1);
  const strata::CompletionResult fresh = strata::complete(engine, 1, turn2, 0, o);
  EXPECT_EQ(fresh.reused_tokens, 0u);
  EXPECT_EQ(reused.generated_ids, fresh.generated_ids);
  std::string streamed;
  for (const std::string& p : pieces) streamed += p;
  EXPECT_EQ(streamed, reused.text);

  // A prompt the slot holds whole still feeds its last token (its logits start the reply).
  const strata::CompletionResult again = strata::complete(engine, 1, turn2, turn2.size(), o);
  EXPECT_EQ(again.reused_tokens, turn2.size() - 1);
  EXPECT_EQ(again.generated_ids, fresh.generated_ids);
}

TEST(ServePrefixCache, CallbackStopsAndLogprobsAreNormalised) {
  strata::EngineSettings s;
  s.context = 128;
  strata::Engine engine(strata::Model::load(strata::test::models_dir() + "/stories260K.gguf"),
                        strata::make_reference_backend(), s);
  const std::vector<TokenId> prompt = engine.model().tokenizer().encode("Once upon a time", {.add_eos = false});
  strata::CompletionOptions o;
  o.max_tokens = 20;
  o.logprobs = true;
  o.top_logprobs = 3;
  int calls = 0;
  const strata::CompletionResult r = strata::complete(engine, 0, prompt, 0, o, [&](const strata::GeneratedToken& t) {
    EXPECT_EQ(t.top.size(), 3u);
    // Greedy: the chosen token is the likeliest, and log-probabilities are <= 0 and ordered.
    EXPECT_EQ(t.top[0].id, t.id);
    EXPECT_FLOAT_EQ(t.top[0].logprob, t.logprob);
    EXPECT_LE(t.top[0].logprob, 0.0f);
    EXPECT_GE(t.top[0].logprob, t.top[1].logprob);
    return ++calls < 3;
  });
  EXPECT_EQ(r.stop, strata::StopCause::Cancelled);
  EXPECT_EQ(r.generated_ids.size(), 3u);
  EXPECT_EQ(strata::finish_reason(r.stop), "cancelled");
  EXPECT_EQ(strata::finish_reason(strata::StopCause::Context), "length");
  EXPECT_EQ(strata::finish_reason(strata::StopCause::StopString), "stop");
}

}  // namespace
