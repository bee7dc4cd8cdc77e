#include "strata/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "strata/error.hpp"

namespace strata {
namespace {

// The bench's token ids: BOS (where there is one and the sequence starts the context), then ids drawn by splitmix64
// from `seed`. Each repetition draws its own, as llama-bench's do: an expert cache that adapts between windows must
// not be timed on a sequence it has already seen.
std::vector<TokenId> bench_tokens(const Model& model, uint32_t n, uint64_t seed, bool starts_context = true) {
  std::vector<TokenId> ids;
  const TokenId bos = model.tokenizer().bos();
  if (bos != kNoToken && starts_context) ids.push_back(bos);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  while (ids.size() < n) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    ids.push_back(static_cast<TokenId>((z ^ (z >> 31)) % model.hparams().n_vocab));
  }
  ids.resize(n);
  return ids;
}

// Seconds for one run of the test: ids[s] is slot s's sequence, fed after the slot's first test.depth positions.
double run_once(Engine& engine, const BenchTest& test, const std::vector<std::vector<TokenId>>& ids) {
  for (uint32_t s = 0; s < ids.size(); ++s) engine.cut(s, test.depth);
  const auto t0 = std::chrono::steady_clock::now();
  if (test.kind == BenchTest::Kind::Prompt) {
    engine.feed(0, ids[0]);
  } else if (ids.size() == 1) {
    for (TokenId id : ids[0]) engine.feed(0, std::span<const TokenId>(&id, 1));
  } else {
    std::vector<Engine::SlotToken> step(ids.size());
    for (size_t t = 0; t < ids[0].size(); ++t) {
      for (uint32_t s = 0; s < ids.size(); ++s) step[s] = {s, ids[s][t]};
      engine.step(step);
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Each slot's ids for a run: slot s draws from its own seed.
std::vector<std::vector<TokenId>> run_tokens(const Model& model, const BenchTest& test, uint32_t n, uint64_t seed) {
  std::vector<std::vector<TokenId>> ids;
  for (uint32_t s = 0; s < test.slots; ++s) {
    ids.push_back(bench_tokens(model, n, seed + 1000003ull * s, /*starts_context=*/test.depth == 0));
  }
  return ids;
}

}  // namespace

std::string BenchTest::name() const {
  return (kind == Kind::Prompt ? "pp" : "tg") + std::to_string(n_tokens) + (slots > 1 ? " x" + std::to_string(slots) : "") +
         (depth > 0 ? " @ d" + std::to_string(depth) : "");
}

BenchResult run_bench(Engine& engine, const BenchTest& test, int repetitions) {
  if (repetitions < 1) throw Error("bench: repetitions must be at least 1");
  if (test.n_tokens == 0) throw Error("bench: " + test.name() + " has no tokens");
  if (uint64_t{test.depth} + test.n_tokens > engine.settings().context) {
    throw Error("bench: " + test.name() + " needs a context of " + std::to_string(uint64_t{test.depth} + test.n_tokens) +
                " tokens; runtime.context is " + std::to_string(engine.settings().context));
  }
  if (test.slots == 0 || (test.slots > 1 && test.kind == BenchTest::Kind::Prompt)) {
    throw Error("bench: " + test.name() + ": slots apply to decode tests, 1 or more");
  }
  if (test.slots > engine.settings().slots) {
    throw Error("bench: " + test.name() + " needs runtime.slots " + std::to_string(test.slots) + "; the engine has " +
                std::to_string(engine.settings().slots));
  }
  // Warm-up: first-touch page faults of the mapped weights and the KV cache stay out of the timings. A decode test
  // warms up over its whole length: the hybrid path's expert cache adapts its slots window by window (swaps), and
  // the repetitions then measure that steady state rather than the cache's first minutes.
  const uint32_t warm_tokens =
      test.kind == BenchTest::Kind::Generate ? test.n_tokens : std::min<uint32_t>(test.n_tokens, 16);
  // The depth: each slot's context before every run, fed once here as one prompt (untimed), with ids of its own.
  if (test.depth > 0) {
    for (uint32_t s = 0; s < test.slots; ++s) {
      engine.cut(s, 0);
      engine.feed(s, bench_tokens(engine.model(), test.depth, 7777777ull + s));
    }
    engine.reset_expert_counts();  // the hybrid summary then describes the test (and its warm-up), not the depth
  }
  const auto warm = run_tokens(engine.model(), test, warm_tokens, 0);
  run_once(engine, test, warm);
  BenchResult r{test, {}, 0, 0, 0, 0, 0};
  for (int i = 0; i < repetitions; ++i) {
    const auto ids = run_tokens(engine.model(), test, test.n_tokens, static_cast<uint64_t>(i) + 1);
    r.tokens_per_second.push_back(static_cast<double>(test.n_tokens) * test.slots / run_once(engine, test, ids));
  }
  std::vector<double> sorted = r.tokens_per_second;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  r.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double v : sorted) var += (v - r.mean) * (v - r.mean);
  r.stddev = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  r.min = sorted.front();
  r.max = sorted.back();
  for (uint32_t s = 0; s < test.slots; ++s) engine.cut(s, 0);
  return r;
}

}  // namespace strata
