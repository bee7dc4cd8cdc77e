// `strata bench`: prefill (ppN) and decode (tgN) tokens per second, llama-bench style: repetitions, median and
// spread, a markdown table or JSON.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "strata/bench.hpp"
#include "strata/engine.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/link_probe.hpp"
#include "strata/experts/link_share.hpp"
#include "strata/op_profile.hpp"
#include "strata/plugin_host.hpp"
#include "strata/process_memory.hpp"
#include "strata/speculative.hpp"
#include "strata/startup_clock.hpp"

namespace strata::cli {
namespace {

// "512,1024" -> {512, 1024}; "0" -> none.
std::vector<uint32_t> parse_counts(const std::string& option, const std::string& value) {
  std::vector<uint32_t> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto n = static_cast<uint32_t>(parse_int(option, item, 0, 1 << 20));
    if (n > 0) out.push_back(n);
  }
  return out;
}

uint64_t parameter_count(const Model& m) {
  uint64_t n = 0;
  for (const gguf::TensorView& t : m.file().tensors()) n += t.n_elements;
  return n;
}

// The link probe on the engine's backend and the default PCIe share it gives this model's experts (stderr).
void print_link_probe(Engine& engine) {
  Backend& be = engine.backend();
  DeviceMemory* memory = be.device_memory();
  DeviceQueues* queues = be.device_queues();
  if (memory == nullptr || queues == nullptr) {
    throw Error("bench --link: backend '" + be.name() +
                "' has no device link to probe; run it with a GPU backend (--backend cuda)");
  }
  const experts::LinkMeasure m = experts::probe_link(*memory, *queues);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double host_read = experts::measure_host_read(threads, uint64_t{1} << 30);
  std::fprintf(stderr, "link probe on %s: %s; host read %.2f GB/s (%u threads)\n", be.describe().c_str(),
               experts::describe(m).c_str(), host_read / 1e9, threads);
  if (!m.pinned) std::fprintf(stderr, "warning: the probe's host memory could not be page-locked: copies were pageable\n");
  // The share for the model's mean expert size (layers of different sizes differ little in it).
  const experts::ExpertGeometry g = experts::expert_geometry(engine.model().weights());
  uint64_t bytes = 0, count = 0;
  for (const experts::LayerExperts& l : g.layers) {
    if (l.n_expert > 0) {
      bytes += l.expert_bytes;
      ++count;
    }
  }
  if (count == 0) {
    std::fprintf(stderr, "the model has no routed experts: no PCIe share to set\n");
    return;
  }
  const uint64_t mean = bytes / count;
  std::fprintf(stderr, "experts.pcie_frac auto: %.3f (experts of %.2f MiB)\n",
               experts::default_pcie_frac(m.h2d_bytes_per_s, host_read, mean, m.copy_overhead_s),
               static_cast<double>(mean) / (1 << 20));
}

// The profiles' inputs: n ids spread over the vocabulary, the same every run.
std::vector<TokenId> spread_ids(size_t n, uint32_t n_vocab) {
  std::vector<TokenId> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<TokenId>((uint64_t{i} * 7919 + 1) % n_vocab);
  return ids;
}

// Empties slot 0 and feeds it `depth` spread ids and one more (untimed), as the tg tests at that depth have their
// context; returns the positions it holds.
uint32_t feed_profile_context(Engine& engine, uint32_t depth, uint32_t n_vocab) {
  engine.cut(0, 0);
  std::vector<TokenId> context = spread_ids(depth, n_vocab);
  context.push_back(1);
  engine.feed(0, context);
  return static_cast<uint32_t>(context.size());
}

}  // namespace

int cmd_bench(const Args& args) {
  ArgParser p("strata bench", "[--config FILE] [--model FILE] [-p N[,N...]] [-n N[,N...]] [-d N[,N...]] [-r N] [--json]",
              "Measures prefill (ppN: N prompt tokens fed as one prompt, in windows of runtime.batch) and decode\n"
              "(tgN: N tokens, one window each) speed in tokens per second, like llama-bench: each test runs -r\n"
              "times from an empty context after a warm-up (a decode test's warm-up is its whole length, so the\n"
              "hybrid path's expert cache has settled); the table gives the median and the standard deviation.\n"
              "A line (stderr) gives the time from the process's start to a ready engine and to the first token\n"
              "(the first test's first window), by phase (backend, map, weights, host copy, cache fill, probe;\n"
              "also `startup` in --json's entries); a last one compares the resident memory the model added with\n"
              "its file plus the KV cache.\n\n"
              "Speculative decoding (-o speculative.draft=ngram|model, speculative.n_max, speculative.model), or\n"
              "--draft-ceiling (drafts that are the model's own greedy continuation, saved from a first pass: acceptance\n"
              "100%): each tgN test becomes two rows, `tgN greedy` (one-token steps) and `tgN <draft> nK` (verify\n"
              "windows), both decoding N tokens greedily after --prompt (BOS alone without it), with a stderr line per\n"
              "test: `drafted D, accepted A (P%), mean accepted length L`, the speed-up, and whether the ids were the\n"
              "same (exit 1 if not).");
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model, backend;
  std::vector<uint32_t> n_prompt = {512}, n_gen = {128};
  long long reps = 5;
  bool json = false;
  long long profile_tokens = 0, profile_prompt = 0;
  long long slots = 1;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's model)", &model);
  p.option("--backend", "NAME", "auto, reference, or a backend plugin's name", &backend);
  p.option("-p|--n-prompt", "N", "prompt lengths to test, comma-separated (0: none; default 512)",
           [&](const std::string& v) { n_prompt = parse_counts("--n-prompt", v); });
  p.option("-n|--n-gen", "N", "decode lengths to test, comma-separated (0: none; default 128)",
           [&](const std::string& v) { n_gen = parse_counts("--n-gen", v); });
  std::vector<uint32_t> depths = {0};
  p.option("-d|--n-depth", "N", "tokens already in the context before each test, comma-separated (like llama-bench's "
           "-d: every pp and tg test at each depth; fed once per test, untimed; default 0)",
           [&](const std::string& v) {
             depths.clear();  // 0 is a depth (an empty context), not "none"
             std::stringstream ss(v);
             for (std::string item; std::getline(ss, item, ',');) {
               depths.push_back(static_cast<uint32_t>(parse_int("--n-depth", item, 0, 1 << 22)));
             }
             if (depths.empty()) throw UsageError("--n-depth: expected a comma-separated list of token counts");
           });
  p.option("-r|--repetitions", "N", "runs per test (default 5)",
           [&](const std::string& v) { reps = parse_int("--repetitions", v, 1, 1000); });
  p.option("--slots", "N", "decode N sequences at once (runtime.slots N): the tg tests report every sequence's tokens "
           "per second together and, in their own column, one sequence's",
           [&](const std::string& v) { slots = parse_int("--slots", v, 1, 64); });
  p.flag("--json", "print the results as JSON instead of a markdown table", &json);
  p.option("--profile", "N", "then decode N more tokens with a clock stamp between ops, after a context of the largest -d "
           "depth, and print (stderr) where the time goes",
           [&](const std::string& v) { profile_tokens = parse_int("--profile", v, 1, 1 << 16); });
  bool link = false;
  p.flag("--link", "then probe the link (a GPU backend): pinned host-to-device rate, a queued copy's cost, the host's "
         "read rate, and the experts.pcie_frac they give (stderr)", &link);
  p.option("--profile-prompt", "N", "then feed an N-token prompt the same way and print where its time goes",
           [&](const std::string& v) { profile_prompt = parse_int("--profile-prompt", v, 1, 1 << 20); });
  std::vector<uint32_t> profile_windows;
  p.option("--profile-window", "K[,K...]", "then, after a context of the largest -d depth, feed 16 verify windows of K "
           "tokens each (every one cut back after it, as a rejected draft is) the same way and print where a window's "
           "time goes",
           [&](const std::string& v) { profile_windows = parse_counts("--profile-window", v); });
  bool ceiling = false;
  std::string spec_prompt;
  p.flag("--draft-ceiling", "speculative tests whose drafts are the model's own greedy continuation (acceptance 100%)",
         &ceiling);
  p.option("--prompt", "TEXT", "speculative tests: decode after this text (BOS first; default BOS alone)", &spec_prompt);
  if (!p.parse(args)) return 0;

  LaunchContext ctx = launch_options.resolve(false);
  config::Launch& launch = ctx.launch;
  if (p.given("--model")) launch.model = std::filesystem::absolute(model).string();
  if (p.given("--backend")) launch.backend = backend;
  std::vector<BenchTest> tests;
  for (uint32_t d : depths) {
    for (uint32_t n : n_prompt) tests.push_back({BenchTest::Kind::Prompt, n, 1, d});
    for (uint32_t n : n_gen) tests.push_back({BenchTest::Kind::Generate, n, static_cast<uint32_t>(slots), d});
  }
  if (slots > 1) launch.runtime.slots = std::max<int>(launch.runtime.slots, static_cast<int>(slots));
  if (tests.empty() && !link) throw UsageError("nothing to measure: -p and -n are both 0 (and no --link)");
  // A window keeps every token's logits: the engine holds up to 16 rows of them, or speculative.n_max + 1.
  const auto most_window = static_cast<uint32_t>(std::max(16, launch.speculative.n_max + 1));
  for (uint32_t k : profile_windows) {
    if (k > most_window) {
      throw UsageError("--profile-window " + std::to_string(k) + ": a window holds at most " +
                       std::to_string(most_window) + " tokens here (raise speculative.n_max for longer ones)");
    }
  }
  // The context holds the longest test at its depth.
  uint32_t longest = 0;
  for (const BenchTest& t : tests) longest = std::max(longest, t.depth + t.n_tokens);
  const uint32_t deepest = *std::max_element(depths.begin(), depths.end());
  if (profile_tokens > 0) longest = std::max(longest, deepest + static_cast<uint32_t>(profile_tokens) + 1);
  longest = std::max(longest, static_cast<uint32_t>(profile_prompt));
  for (uint32_t k : profile_windows) longest = std::max(longest, deepest + 1 + k);
  launch.runtime.context = std::max<int>(launch.runtime.context, static_cast<int>(longest));

  const uint64_t rss_before = resident_bytes();
  std::unique_ptr<Engine> engine = Engine::from_launch(launch);
  const Model& m = engine->model();
  const std::string model_name = std::filesystem::path(m.file().name()).filename().string();
  std::vector<BenchResult> results;
  std::vector<nlohmann::json> extras;  // per result: the speculative counts, when it is a speculative row
  std::string expert_summaries;
  const bool speculative = ceiling || launch.speculative.draft != config::DraftKind::Off;
  std::unique_ptr<Draft> draft = ceiling ? nullptr : make_draft(launch, *engine);
  std::vector<TokenId> spec_ids;
  if (speculative) {
    if (slots > 1) throw UsageError("speculative tests decode one sequence: leave out --slots");
    spec_ids = m.tokenizer().encode(spec_prompt, {.add_bos = true, .add_eos = false, .parse_special = false});
    if (spec_ids.empty()) spec_ids.push_back(0);
  }
  bool ids_differ = false;
  for (const BenchTest& t : tests) {
    engine->reset_expert_counts();
    if (speculative && t.kind == BenchTest::Kind::Generate) {
      if (t.depth > 0) throw UsageError("speculative tests start after --prompt: leave out -d");
      const uint32_t n_max = static_cast<uint32_t>(launch.speculative.n_max);
      SpeculativeBenchResult sr =
          run_speculative_bench(*engine, t.n_tokens, spec_ids, draft.get(), n_max, static_cast<int>(reps));
      const std::string draft_name = ceiling ? "ceiling" : std::string(draft->name());
      sr.plain.test.label = "greedy";
      sr.spec.test.label = draft_name + " n" + std::to_string(n_max);
      const double speedup = sr.plain.median > 0 ? sr.spec.median / sr.plain.median : 0.0;
      std::fprintf(stderr, "strata bench: %s: %s over %d runs of %zu tokens; %.2fx %s; ids %s\n",
                   sr.spec.test.name().c_str(), draft_summary(sr.stats).c_str(), static_cast<int>(reps), sr.generated,
                   speedup, sr.plain.test.name().c_str(), sr.same_ids ? "the same" : "DIFFER");
      ids_differ = ids_differ || !sr.same_ids;
      results.push_back(sr.plain);
      extras.push_back(nlohmann::json::object());
      results.push_back(sr.spec);
      extras.push_back({{"draft", draft_name}, {"n_max", n_max}, {"drafted", sr.stats.drafted},
                        {"accepted", sr.stats.accepted}, {"windows", sr.stats.windows},
                        {"mean_accepted_length", sr.stats.mean_accepted_length()}, {"speedup", speedup},
                        {"same_ids", sr.same_ids}});
      continue;
    }
    results.push_back(run_bench(*engine, t, static_cast<int>(reps)));
    extras.push_back(nlohmann::json::object());
    if (engine->hybrid()) {
      const double rate = t.kind == BenchTest::Kind::Generate ? results.back().median : 0.0;
      expert_summaries += "hybrid experts during " + t.name() + " (warm-up included):\n" + engine->expert_summary(rate);
    }
  }

  if (results.empty()) {
    // --link alone: no table
  } else if (json) {
    const startup::Report started = startup::report();
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [name, seconds] : started.phases) phases[name] = seconds;
    const nlohmann::json startup_json = {{"ready_s", started.ready}, {"first_token_s", started.first_token},
                                         {"phases_s", phases}};
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const BenchResult& r = results[i];
      out.push_back({{"model", model_name},
                     {"model_bytes", m.file_bytes()},
                     {"params", parameter_count(m)},
                     {"backend", engine->backend().name()},
                     {"batch", engine->settings().batch},
                     {"test", r.test.name()},
                     {"n_tokens", r.test.n_tokens},
                     {"n_depth", r.test.depth},
                     {"slots", r.test.slots},
                     {"per_slot_ts", r.per_slot()},
                     {"repetitions", r.tokens_per_second.size()},
                     {"samples_ts", r.tokens_per_second},
                     {"median_ts", r.median},
                     {"avg_ts", r.mean},
                     {"stddev_ts", r.stddev},
                     {"min_ts", r.min},
                     {"max_ts", r.max},
                     {"startup", startup_json}});
      if (!extras[i].empty()) out.back()["speculative"] = extras[i];
    }
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    // With --slots, a column for one sequence's rate (the t/s column is every sequence's together).
    std::printf("| model | size | params | backend | test | t/s (median ± sd) | min .. max |%s\n",
                slots > 1 ? " per slot |" : "");
    std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |%s\n", slots > 1 ? " ---: |" : "");
    for (const BenchResult& r : results) {
      std::string per_slot;
      if (slots > 1) {
        char cell[32] = "";
        if (r.test.slots > 1) std::snprintf(cell, sizeof cell, "%.2f", r.per_slot());
        per_slot = std::string(" ") + cell + " |";
      }
      std::printf("| %s | %s | %.2f M | %s | %s | %.2f ± %.2f | %.2f .. %.2f |%s\n", model_name.c_str(),
                  format_mib(m.file_bytes()).c_str(), static_cast<double>(parameter_count(m)) / 1e6,
                  engine->backend().name().c_str(), r.test.name().c_str(), r.median, r.stddev, r.min, r.max,
                  per_slot.c_str());
    }
  }
  std::fputs(expert_summaries.c_str(), stderr);
  if (link) print_link_probe(*engine);
  if (profile_tokens > 0) {
    OpProfile profile;
    feed_profile_context(*engine, deepest, m.hparams().n_vocab);
    std::vector<TokenId> t = {1};
    engine->set_profile(&profile);
    for (long long i = 0; i < profile_tokens; ++i) engine->feed(0, t);
    engine->set_profile(nullptr);
    std::fprintf(stderr, "decode profile, %lld tokens at depth %u on %s:\n%s", profile_tokens, deepest,
                 engine->backend().describe().c_str(), profile.table(static_cast<uint64_t>(profile_tokens)).c_str());
  }
  if (profile_prompt > 0) {
    OpProfile profile;
    engine->cut(0, 0);
    const std::vector<TokenId> prompt = spread_ids(static_cast<size_t>(profile_prompt), m.hparams().n_vocab);
    engine->feed(0, prompt);  // warm: the first window of a shape runs without a graph
    engine->cut(0, 0);
    engine->set_profile(&profile);
    engine->feed(0, prompt);
    engine->set_profile(nullptr);
    engine->cut(0, 0);
    std::fprintf(stderr, "prompt profile, %lld tokens (windows of %u) on %s:\n%s", profile_prompt,
                 engine->settings().batch, engine->backend().describe().c_str(),
                 profile.table(static_cast<uint64_t>(profile_prompt)).c_str());
  }
  for (uint32_t k : profile_windows) {
    constexpr int kWindows = 16;
    OpProfile profile;
    const uint32_t at = feed_profile_context(*engine, deepest, m.hparams().n_vocab);
    const std::vector<TokenId> window = spread_ids(k, m.hparams().n_vocab);
    engine->feed_window(0, window);  // warm: the first window of a shape runs without a graph
    engine->cut(0, at);
    engine->set_profile(&profile);
    for (int i = 0; i < kWindows; ++i) {
      engine->feed_window(0, window);
      engine->cut(0, at);
    }
    engine->set_profile(nullptr);
    std::fprintf(stderr, "window profile, %d windows of %u tokens at depth %u on %s:\n%s", kWindows, k,
                 deepest, engine->backend().describe().c_str(), profile.table(kWindows, "window").c_str());
  }
  std::fprintf(stderr, "strata bench: %s\n", startup::line(startup::report()).c_str());
  // What the model added to the process (its mapped pages, the KV cache, the activations) against the budget.
  const uint64_t peak = peak_resident_bytes();
  const uint64_t added = peak > rss_before ? peak - rss_before : 0;
  const uint64_t budget = m.file_bytes() + engine->kv().bytes();
  std::fprintf(stderr,
               "strata bench: peak RSS %s, of which %s since before loading; model file %s + KV cache %s = %s "
               "(the added RSS is %.1f%% of that)\n",
               format_mib(peak).c_str(), format_mib(added).c_str(), format_mib(m.file_bytes()).c_str(),
               format_mib(engine->kv().bytes()).c_str(), format_mib(budget).c_str(),
               100.0 * static_cast<double>(added) / static_cast<double>(budget));
  if (ids_differ) {
    std::fprintf(stderr, "strata bench: speculative decoding changed greedy ids (a bug: please report it)\n");
    return 1;
  }
  return 0;
}

}  // namespace strata::cli
