// runtime.slots: several sequences decoded in one window (Engine::step, complete_together). Each sequence's ids
// must be the ones it gets alone, on every backend, for greedy and seeded sampling, and when one sequence ends
// before the other; bad windows and steps are refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "strata/error.hpp"
#include "strata/generate.hpp"

namespace {

using strata::Engine;
using strata::TokenId;

std::unique_ptr<Engine> open_slots_engine(const std::string& model, const std::string& backend, uint32_t slots) {
  strata::EngineSettings s = strata::test::test_settings();
  s.slots = slots;
  return strata::test::open_engine(strata::test::models_dir() + "/" + model, backend, s);
}

std::vector<TokenId> encode(const Engine& engine, const std::string& text) {
  return engine.model().tokenizer().encode(text, {true, false, false});
}

struct Sequence {
  std::string prompt;
  int max_tokens;
  float temperature;
  uint64_t seed;
};

strata::SequenceRequest request(const Engine& engine, uint32_t slot, const Sequence& q) {
  strata::SequenceRequest r;
  r.slot = slot;
  r.prompt = encode(engine, q.prompt);
  r.options.max_tokens = q.max_tokens;
  r.options.sampling.temperature = q.temperature;
  r.options.sampling.seed = q.seed;
  return r;
}

// Runs the sequences alone (each on slot 0, one after the other) and together (slot i each), and compares.
void expect_together_equals_alone(const std::string& model, const std::vector<Sequence>& seqs) {
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    SCOPED_TRACE(model + " on " + backend);
    auto engine = open_slots_engine(model, backend, static_cast<uint32_t>(seqs.size()));
    std::vector<strata::CompletionResult> alone;
    for (const Sequence& q : seqs) {
      const strata::SequenceRequest r = request(*engine, 0, q);
      alone.push_back(strata::complete(*engine, 0, r.prompt, 0, r.options));
    }
    std::vector<strata::SequenceRequest> reqs;
    for (size_t i = 0; i < seqs.size(); ++i) reqs.push_back(request(*engine, static_cast<uint32_t>(i), seqs[i]));
    const std::vector<strata::CompletionResult> together = strata::complete_together(*engine, reqs);
    ASSERT_EQ(together.size(), seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i) {
      SCOPED_TRACE("sequence " + std::to_string(i) + " '" + seqs[i].prompt + "'");
      ASSERT_FALSE(alone[i].generated_ids.empty());
      EXPECT_EQ(together[i].generated_ids, alone[i].generated_ids);
      EXPECT_EQ(together[i].text, alone[i].text);
      EXPECT_EQ(together[i].stop, alone[i].stop);
      EXPECT_EQ(engine->position(static_cast<uint32_t>(i)), reqs[i].prompt.size() + together[i].decode_tokens)
          << "each slot holds its own prompt and fed tokens";
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(EngineSlots, TwoGreedySequencesEqualTheirOneSlotRuns) {
  // The second sequence ends first: the last steps run the first one alone.
  expect_together_equals_alone("stories260K.gguf", {{"Once upon a time", 40, 0.0f, 1}, {"The little dog", 17, 0.0f, 1}});
}

TEST(EngineSlots, MoeSequencesShareTheirExpertsAndKeepTheirIds) {
  // The upcycled MoE: a step's window routes both sequences' tokens in one MOE op.
  expect_together_equals_alone("stories260K-moe.gguf",
                               {{"Once upon a time", 24, 0.0f, 1}, {"Lily wanted a cat", 30, 0.0f, 1},
                                {"The sun", 12, 0.0f, 1}});
}

TEST(EngineSlots, SeededSamplingIsPerSequence) {
  expect_together_equals_alone("stories260K.gguf", {{"Once upon a time", 32, 0.9f, 7}, {"Once upon a time", 32, 0.9f, 11}});
}

TEST(EngineSlots, BadStepsAndWindowsAreRefusedByName) {
  auto engine = open_slots_engine("stories260K.gguf", "reference", 2);
  const std::vector<TokenId> prompt = encode(*engine, "Once");
  engine->feed(0, prompt);
  engine->feed(1, prompt);
  const auto message_of = [&](std::vector<Engine::SlotToken> step) {
    try {
      engine->step(step);
    } catch (const strata::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message_of({}).find("no sequences"), std::string::npos);
  EXPECT_NE(message_of({{2, 1}}).find("slot 2 is not one of the engine's 2"), std::string::npos);
  EXPECT_NE(message_of({{0, 1}, {0, 2}}).find("slot 0 twice"), std::string::npos);
  EXPECT_EQ(engine->position(0), prompt.size()) << "a refused step feeds nothing";
  EXPECT_EQ(message_of({{1, 1}, {0, 2}}), "(no error)") << "any order of slots";
  EXPECT_EQ(engine->position(0), prompt.size() + 1);

  strata::Window w;
  const std::vector<TokenId> tokens = {1, 2, 3};
  w.tokens = tokens;
  const std::vector<strata::SlotRun> gap = {{0, 0, 0, 1}, {1, 0, 2, 1}};
  w.runs = gap;
  EXPECT_THROW(w.slot_runs(), strata::Error);
  const std::vector<strata::SlotRun> short_runs = {{0, 0, 0, 1}, {1, 0, 1, 1}};
  w.runs = short_runs;
  EXPECT_THROW(w.slot_runs(), strata::Error);
  const std::vector<strata::SlotRun> tiled = {{1, 5, 0, 2}, {0, 9, 2, 1}};
  w.runs = tiled;
  EXPECT_EQ(w.slot_runs().size(), 2u);

  std::vector<strata::SequenceRequest> same_slot(2);
  same_slot[0].prompt = same_slot[1].prompt = prompt;
  EXPECT_THROW(strata::complete_together(*engine, same_slot), strata::Error);
}

}  // namespace
