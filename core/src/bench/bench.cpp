#include "strata/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "strata/error.hpp"
#include "strata/generate.hpp"
#include "strata/startup_clock.hpp"

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

void summarize(BenchResult& r) {
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
}

// The ceiling's draft: the saved greedy continuation of `prompt_size` prompt tokens, replayed.
class ReplayDraft final : public Draft {
 public:
  ReplayDraft(std::vector<TokenId> saved, size_t prompt_size) : saved_(std::move(saved)), prompt_size_(prompt_size) {}
  std::string_view name() const override { return "ceiling"; }
  std::vector<TokenId> propose(std::span<const TokenId> context, uint32_t n_max) override {
    // context = prompt + generated so far (its last the pending token): the continuation from there.
    const size_t at = context.size() - prompt_size_;
    if (at >= saved_.size()) return {};
    const size_t n = std::min<size_t>(n_max, saved_.size() - at);
    return {saved_.begin() + static_cast<std::ptrdiff_t>(at), saved_.begin() + static_cast<std::ptrdiff_t>(at + n)};
  }

 private:
  std::vector<TokenId> saved_;
  size_t prompt_size_;
};

}  // namespace

SpeculativeBenchResult run_speculative_bench(Engine& engine, uint32_t n_tokens, std::span<const TokenId> prompt,
                                             Draft* draft, uint32_t n_max, int repetitions) {
  if (repetitions < 1) throw Error("bench: repetitions must be at least 1");
  if (prompt.empty()) throw Error("bench: the speculative test needs a prompt (BOS at least)");
  if (prompt.size() + n_tokens > engine.settings().context) {
    throw Error("bench: the speculative test needs a context of " + std::to_string(prompt.size() + n_tokens) +
                " tokens; runtime.context is " + std::to_string(engine.settings().context));
  }
  CompletionOptions o;
  o.max_tokens = static_cast<int>(n_tokens);
  o.sampling.temperature = 0.0f;
  const auto once = [&](Draft* d) {
    engine.cut(0, 0);
    if (d) d->reset();
    CompletionOptions x = o;
    x.draft = d;
    x.draft_n_max = d ? n_max : 0;
    return complete(engine, 0, prompt, 0, x);
  };
  const CompletionResult plain = once(nullptr);  // warm-up, and the ceiling's drafts
  std::unique_ptr<ReplayDraft> replay;
  if (draft == nullptr) {
    std::vector<TokenId> saved = plain.generated_ids;
    replay = std::make_unique<ReplayDraft>(std::move(saved), prompt.size());
    draft = replay.get();
  }
  once(draft);  // warm-up
  SpeculativeBenchResult r;
  r.plain.test = r.spec.test = BenchTest{BenchTest::Kind::Generate, n_tokens, 1, 0};
  r.generated = plain.generated_ids.size();
  const auto rate = [](const CompletionResult& c) {
    return c.decode_seconds > 0 ? static_cast<double>(c.generated_ids.size()) / c.decode_seconds : 0.0;
  };
  for (int i = 0; i < repetitions; ++i) {
    const CompletionResult a = once(nullptr);
    const CompletionResult b = once(draft);
    r.plain.tokens_per_second.push_back(rate(a));
    r.spec.tokens_per_second.push_back(rate(b));
    r.stats += b.draft;
    r.same_ids = r.same_ids && a.generated_ids == plain.generated_ids && b.generated_ids == plain.generated_ids;
  }
  summarize(r.plain);
  summarize(r.spec);
  engine.cut(0, 0);
  return r;
}

std::string BenchTest::name() const {
  return (kind == Kind::Prompt ? "pp" : "tg") + std::to_string(n_tokens) + (slots > 1 ? " x" + std::to_string(slots) : "") +
         (depth > 0 ? " @ d" + std::to_string(depth) : "") + (label.empty() ? "" : " " + label);
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
    startup::mark_first_token();   // the bench's first logits (the startup line), as after a prompt
  }
  const auto warm = run_tokens(engine.model(), test, warm_tokens, 0);
  run_once(engine, test, warm);
  startup::mark_first_token();
  BenchResult r{test, {}, 0, 0, 0, 0, 0};
  for (int i = 0; i < repetitions; ++i) {
    const auto ids = run_tokens(engine.model(), test, test.n_tokens, static_cast<uint64_t>(i) + 1);
    r.tokens_per_second.push_back(static_cast<double>(test.n_tokens) * test.slots / run_once(engine, test, ids));
  }
  summarize(r);
  for (uint32_t s = 0; s < test.slots; ++s) engine.cut(s, 0);
  return r;
}

}  // namespace strata
