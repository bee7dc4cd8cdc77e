// `strata profile`: the routing profile of a model: a prompt set run through prefill and a few decode tokens each,
// every (layer, expert) routing choice counted, written as the JSON file experts.profile reads.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "strata/engine.hpp"
#include "strata/generate.hpp"
#include "strata/route_profile.hpp"

namespace strata::cli {
namespace {

// The built-in set: short, varied (a story, code, a chat turn, facts, a list, arithmetic, another language).
const std::vector<std::string>& builtin_prompts() {
  static const std::vector<std::string> prompts = {
      "Once upon a time, in a small village by the sea, there lived a girl who",
      "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
      "User: Can you explain what a hash table is, in two sentences?\nAssistant:",
      "The capital of France is Paris. The capital of Japan is",
      "Here is a shopping list for a week of dinners:\n1.",
      "Question: What is 17 times 23? Answer: Let's think step by step.",
      "#include <stdio.h>\n\nint main(void) {\n",
      "Der schnelle braune Fuchs springt über den faulen Hund, und dann",
  };
  return prompts;
}

// One prompt per line; empty lines are skipped; "\n" in a line stands for a newline (and "\\" for a backslash).
std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read --prompts '" + path + "': " + std::strerror(errno));
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::string prompt;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && (line[i + 1] == 'n' || line[i + 1] == '\\')) {
        prompt += line[i + 1] == 'n' ? '\n' : '\\';
        ++i;
      } else {
        prompt += line[i];
      }
    }
    prompts.push_back(prompt);
  }
  if (prompts.empty()) throw UsageError("--prompts '" + path + "' has no prompts (one a line; empty lines are skipped)");
  return prompts;
}

// The share of all routes that went to the most used quarter of the experts (0.25 for a uniform router).
double top_quarter_share(const experts::ExpertProfile& p) {
  std::vector<uint64_t> counts;
  uint64_t total = 0;
  for (const experts::ExpertKey& k : p.rank()) {
    counts.push_back(p.count(k));
    total += p.count(k);
  }
  uint64_t top = 0;
  for (size_t i = 0; i < (counts.size() + 3) / 4; ++i) top += counts[i];
  return total > 0 ? static_cast<double>(top) / static_cast<double>(total) : 0.0;
}

}  // namespace

int cmd_profile(const Args& args) {
  ArgParser p("strata profile", "[--config FILE] [--model FILE] [--prompts FILE] [-n N] [--out FILE] [options]",
              "Records a model's routing profile: each prompt is fed (prefill) and N tokens are decoded greedily\n"
              "after it, every (layer, expert) routing choice is counted, and the counts go to a JSON file that\n"
              "experts.profile reads to fill the expert cache with the most used experts first (experts.record\n"
              "writes the same file from any run). Any backend that sees its routes records: the CPU's (reference,\n"
              "cpu_avx2) or a GPU's hybrid path (experts.cache set); the launch's backend unless --backend says.\n\n"
              "--prompts FILE: one prompt per line, empty lines skipped, \\n in a line a newline. Without it, a\n"
              "built-in set of 8 short prompts (a story, code, a chat turn, facts, a list, arithmetic, German).\n"
              "--out omitted: <model>.profile.json beside the model, the file experts.profile: auto uses.");
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model, backend, prompts_file, out;
  long long decode = 16;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's model)", &model);
  p.option("--backend", "NAME", "auto, reference, or a backend plugin's name (overrides the launch)", &backend);
  p.option("--prompts", "FILE", "the prompts, one a line (default: the built-in set)", &prompts_file);
  p.option("-n|--n-decode", "N", "tokens decoded (greedy) after each prompt and counted too (default 16)",
           [&](const std::string& v) { decode = parse_int("--n-decode", v, 0, 1 << 20); });
  p.option("--out", "FILE", "where the profile goes (default: <model>.profile.json beside the model)", &out);
  if (!p.parse(args)) return 0;

  LaunchContext ctx = launch_options.resolve(false);
  config::Launch& launch = ctx.launch;
  if (p.given("--model")) launch.model = std::filesystem::absolute(model).string();
  if (p.given("--backend")) launch.backend = backend;
  launch.experts.record.reset();  // this command writes its own file
  const std::vector<std::string> prompts = p.given("--prompts") ? read_prompts(prompts_file) : builtin_prompts();
  if (!launch.model) throw UsageError("no model: give --model FILE or set `model:` in the launch");
  const std::filesystem::path out_path =
      p.given("--out") ? std::filesystem::absolute(out) : experts::default_profile_path(*launch.model);
  std::error_code ec;
  if (out_path.has_parent_path() && !std::filesystem::is_directory(out_path.parent_path(), ec))
    throw UsageError("--out: the folder " + out_path.parent_path().string() + " does not exist");

  std::unique_ptr<Engine> engine = Engine::from_launch(launch);
  engine_profile(*engine, {});  // the engine sees its routes, or the message says how to make it
  GenerateOptions gen;
  gen.n_predict = static_cast<int>(decode);
  gen.sampling.temperature = 0;
  uint64_t fed = 0;
  for (const std::string& prompt : prompts) {
    engine->cut(0, 0);
    const GenerateResult r = generate(*engine, 0, prompt, gen, {});
    fed += r.prompt_ids.size() + r.decode_tokens;
  }
  experts::ProfileInfo info = model_profile_info(engine->model());
  info.prompts = p.given("--prompts") ? std::filesystem::absolute(prompts_file).string()
                                      : "built-in (" + std::to_string(prompts.size()) + " prompts)";
  info.prompt_count = prompts.size();
  info.decode_tokens = static_cast<uint64_t>(decode);
  info.backend = engine->backend().describe();
  info.recorded_by = "strata profile";
  const experts::ExpertProfile profile = engine_profile(*engine, info);
  profile.save(out_path);
  std::fprintf(stderr,
               "strata profile: %zu prompts, %llu tokens counted (%llu fed) on %s: %u layers x %u experts; the most "
               "used quarter of the experts took %.1f%% of the routes; wrote %s\n",
               prompts.size(), static_cast<unsigned long long>(profile.positions()),
               static_cast<unsigned long long>(fed), engine->backend().describe().c_str(),
               profile.identity().n_layer, profile.identity().n_expert, 100.0 * top_quarter_share(profile),
               out_path.string().c_str());
  return 0;
}

}  // namespace strata::cli
