#include "strata/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "strata/error.hpp"

namespace strata {
namespace {

// The bench's token ids: BOS (where there is one), then ids drawn by splitmix64 from `seed`. Each repetition draws
// its own, as llama-bench's do: an expert cache that adapts between windows must not be timed on a sequence it has
// already seen.
std::vector<TokenId> bench_tokens(const Model& model, uint32_t n, uint64_t seed) {
  std::vector<TokenId> ids;
  const TokenId bos = model.tokenizer().bos();
  if (bos != kNoToken) ids.push_back(bos);
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

// Seconds for one run of the test.
double run_once(Engine& engine, const BenchTest& test, const std::vector<TokenId>& ids) {
  engine.cut(0, 0);
  const auto t0 = std::chrono::steady_clock::now();
  if (test.kind == BenchTest::Kind::Prompt) {
    engine.feed(0, ids);
  } else {
    for (TokenId id : ids) engine.feed(0, std::span<const TokenId>(&id, 1));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string BenchTest::name() const { return (kind == Kind::Prompt ? "pp" : "tg") + std::to_string(n_tokens); }

BenchResult run_bench(Engine& engine, const BenchTest& test, int repetitions) {
  if (repetitions < 1) throw Error("bench: repetitions must be at least 1");
  if (test.n_tokens == 0) throw Error("bench: " + test.name() + " has no tokens");
  if (test.n_tokens > engine.settings().context) {
    throw Error("bench: " + test.name() + " needs a context of " + std::to_string(test.n_tokens) +
                " tokens; runtime.context is " + std::to_string(engine.settings().context));
  }
  const std::vector<TokenId> warm = bench_tokens(engine.model(), std::min<uint32_t>(test.n_tokens, 16), 0);
  // Warm-up: first-touch page faults of the mapped weights and the KV cache stay out of the timings.
  run_once(engine, test, warm);
  BenchResult r{test, {}, 0, 0, 0, 0, 0};
  for (int i = 0; i < repetitions; ++i) {
    const std::vector<TokenId> ids = bench_tokens(engine.model(), test.n_tokens, static_cast<uint64_t>(i) + 1);
    r.tokens_per_second.push_back(test.n_tokens / run_once(engine, test, ids));
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
  engine.cut(0, 0);
  return r;
}

}  // namespace strata
