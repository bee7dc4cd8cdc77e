// Prefill and decode speed as llama-bench measures them: ppN feeds N prompt tokens as one prompt (in windows of
// runtime.batch), tgN decodes N tokens one window at a time, each repetition from an empty slot (or, with a depth,
// from a slot holding `depth` tokens already, like llama-bench's -d), after one untimed warm-up. Tokens are drawn
// from a fixed seed (BOS first), so every run feeds the same ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/engine.hpp"
#include "strata/speculative.hpp"

namespace strata {

struct BenchTest {
  enum class Kind { Prompt, Generate };
  Kind kind;
  uint32_t n_tokens;
  // tgN with slots > 1: that many sequences decoded together (Engine::step), N tokens each, each with its own ids;
  // tokens_per_second counts every sequence's tokens (the aggregate), per_slot() one sequence's.
  uint32_t slots = 1;
  // Tokens each slot holds before every timed run (fed once, untimed; each run is cut back to them).
  uint32_t depth = 0;
  std::string label = {};  // appended to the name after a space: "greedy", "ngram n8" (speculative tests)
  std::string name() const;  // "pp512", "tg128", "tg128 x2", "tg64 @ d16384", "tg128 ngram n8"
};

struct BenchResult {
  BenchTest test;
  std::vector<double> tokens_per_second;  // one per repetition
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
  double per_slot() const { return median / test.slots; }  // one sequence's median rate
};

// Runs `test` `repetitions` times on slot 0 (slots 0 .. slots-1 for a tg test of several; each is cut back to its
// depth before each run). The engine's context must hold depth + n_tokens, and runtime.slots the test's slots.
BenchResult run_bench(Engine& engine, const BenchTest& test, int repetitions);

// Speculative decoding measured (strata bench with -o speculative.draft=... or --draft-ceiling): each repetition
// decodes n_tokens greedily after `prompt` twice, with one-token steps (`plain`) and with verify windows of up to
// n_max drafts (`spec`), after one untimed warm-up of each; the rates are generated tokens over decode seconds.
// draft null: the ceiling, whose drafts are the plain pass's own greedy continuation (acceptance 100%).
// same_ids: every speculative run gave the plain run's ids (it must).
struct SpeculativeBenchResult {
  BenchResult plain, spec;
  DraftStats stats;       // the timed speculative runs' counts, together
  size_t generated = 0;   // tokens each run generated (fewer than n_tokens when the model ends its text)
  bool same_ids = true;
};
SpeculativeBenchResult run_speculative_bench(Engine& engine, uint32_t n_tokens, std::span<const TokenId> prompt,
                                             Draft* draft, uint32_t n_max, int repetitions);

}  // namespace strata
