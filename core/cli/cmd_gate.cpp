// `strata gate`: exactness gates. --save runs a prompt set greedily and writes the ids with the model's identity
// and the launch; --check re-runs the saved prompts and compares id for id (exit 0 all pass, 1 otherwise).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "projector_launch.hpp"
#include "shipped_config.hpp"
#include "strata/engine.hpp"
#include "strata/gate.hpp"

namespace strata::cli {
namespace {

const char* const kDefaultLaunch = "gate-default.yaml";

const char* const kGateSummary =
    "Exactness gate. --save FILE runs each prompt greedily (argmax, whatever the launch's sampling says) for\n"
    "N tokens and writes FILE: per prompt its name, text, prompt_ids and generated ids, plus the model's\n"
    "identity (file, size, hashes of its header and vocabulary), the backend and the effective launch.\n"
    "--check FILE re-runs the prompts stored in FILE and compares them id for id: one line per prompt, PASS or\n"
    "the first diverging position with both ids and their text. Exit 0 when every prompt passes, 1 when one\n"
    "diverges, 2 for bad input. A launch or model that differs from the saved run's is reported, not refused;\n"
    "a different vocabulary is refused (its ids mean other tokens).\n\n"
    "The launch: --config FILE, else configs/gate-default.yaml (a fixed expert cache, CPU backend by 'auto').\n"
    "The model: --model FILE; with --check and no --model (nor -o model=, nor STRATA_MODEL), the saved run's.\n"
    "Prompts: chat, code, math and long (cut to fit: prompt tokens + N <= runtime.context), or --prompts FILE,\n"
    "a JSON array of {\"name\": \"...\", \"text\": \"...\"}. Each prompt is encoded as 'strata run' encodes it\n"
    "(BOS, no chat template). N: -n, else 32 for --save and the saved N for --check.";

// The model of the saved run's launch, when it named one.
std::optional<std::string> saved_model(const gate::Record& saved) {
  const nlohmann::json launch = nlohmann::json::parse(saved.launch_json);
  const auto it = launch.find("model");
  if (it == launch.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::string launch_json(const config::Launch& launch) {
  return nlohmann::ordered_json::parse(config::render_json(launch)).at("launch").dump();
}

void print_list(const char* heading, const std::vector<std::string>& lines) {
  std::printf("%s\n", heading);
  for (const std::string& l : lines) std::printf("  %s\n", l.c_str());
}

}  // namespace

int cmd_gate(const Args& args) {
  ArgParser p("strata gate",
              "[--config FILE] [--model FILE] [-o KEY=VALUE]... [--prompts FILE] [-n N] (--save FILE | --check FILE)",
              kGateSummary);
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model, backend, prompts_file, save_file, check_file;
  long long n_tokens = gate::kDefaultTokens;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's and, with --check, the saved run's)", &model);
  p.option("--backend", "NAME", "auto, reference, or a backend plugin's name (overrides the launch)", &backend);
  p.option("--prompts", "FILE", "a JSON array of {\"name\", \"text\"} objects instead of the built-in set (--save)",
           &prompts_file);
  p.option("-n|--n-predict", "N", "tokens generated per prompt (default: 32 with --save, the saved N with --check)",
           [&](const std::string& v) { n_tokens = parse_int("--n-predict", v, 1, 1 << 20); });
  p.option("--save", "FILE", "run the prompts and write the reference FILE", &save_file);
  p.option("--check", "FILE", "re-run the prompts of FILE and compare with it", &check_file);
  if (!p.parse(args)) return 0;
  const bool check = p.given("--check");
  if (p.given("--save") == check) {
    throw UsageError("'strata gate' needs exactly one of --save FILE (write a reference) and --check FILE (compare "
                     "with one)");
  }
  if (check && p.given("--prompts")) {
    throw UsageError("--prompts is for --save; --check re-runs the prompts stored in " + check_file);
  }
  if ((check ? check_file : save_file).empty()) throw UsageError(std::string(check ? "--check" : "--save") + " needs a file name");

  if (!check) {
    // Refused before the prompts run, not after.
    const std::filesystem::path folder = std::filesystem::absolute(save_file).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
      throw Error("cannot write '" + save_file + "': the folder " + folder.string() +
                  " does not exist; create it or save elsewhere");
    }
  }
  std::optional<gate::Record> saved;
  if (check) saved = gate::read_record(check_file);
  std::vector<gate::Prompt> prompts;
  if (saved) {
    for (const gate::Case& c : saved->cases) prompts.push_back({c.name, c.text, c.images});
  } else {
    prompts = p.given("--prompts") ? gate::read_prompts(prompts_file) : gate::builtin_prompts();
  }
  // A check compares at most the ids that were saved, so it generates no more than those.
  const int n = !saved ? static_cast<int>(n_tokens)
                       : std::min(saved->n_predict, p.given("--n-predict") ? static_cast<int>(n_tokens) : INT_MAX);

  LaunchContext ctx = launch_options.resolve_or(
      launch_options.config_file().empty() ? shipped_config(kDefaultLaunch) : std::filesystem::path());
  config::Launch& launch = ctx.launch;
  const config::Provenance::Kind model_from = launch.from("model").kind;
  if (p.given("--model")) {
    launch.model = std::filesystem::absolute(model).string();
  } else if (saved && (model_from == config::Provenance::Kind::Default || model_from == config::Provenance::Kind::File)) {
    const std::optional<std::string> path = saved_model(*saved);
    if (!path) throw Error(check_file + ": the saved launch names no model; pass --model FILE");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec)) {
      throw Error("the saved run's model " + *path + " is not here; pass --model FILE (the same model, " +
                  saved->model.file + ")");
    }
    launch.model = *path;
  }
  if (p.given("--backend")) launch.backend = backend;

  std::unique_ptr<Engine> engine = Engine::from_launch(launch);
  const Tokenizer& tok = engine->model().tokenizer();
  // mmproj: the built-in set gains its image prompt, and prompts with images run through the projector.
  const std::unique_ptr<vision::Projector> projector = load_projector(launch.mmproj, engine->model());
  if (!saved && !p.given("--prompts") && projector) prompts = gate::builtin_prompts(true);
  gate::Record now;
  now.strata_version = STRATA_VERSION;
  now.n_predict = n;
  now.model = gate::identify(engine->model());
  now.backend = engine->backend().name();
  now.backend_detail = engine->backend().describe();
  now.launch_file = launch.file;
  now.launch_json = launch_json(launch);

  if (!saved) {
    for (const gate::Prompt& prompt : prompts) {
      now.cases.push_back(gate::run_case(*engine, prompt, n, 0, projector.get()));
      const gate::Case& c = now.cases.back();
      const std::string cut = c.cut_from > 0 ? " (cut from " + std::to_string(c.cut_from) + " to fit)" : "";
      std::printf("%s: %zu prompt ids%s, %zu ids (stop %s)\n", c.name.c_str(), c.prompt_ids.size(), cut.c_str(),
                  c.ids.size(), c.stop.c_str());
    }
    gate::write_record(now, save_file);
    std::printf("strata gate: saved %zu prompts, %d ids each, on %s (%s) to %s\n", now.cases.size(), n,
                now.backend.c_str(), now.model.file.c_str(), save_file.c_str());
    return 0;
  }

  if (!gate::same_vocabulary(saved->model, now.model)) {
    throw Error(check_file + " was saved with another vocabulary (" + saved->model.file + ": " +
                std::to_string(saved->model.n_vocab) + " tokens, vocab_hash " + saved->model.vocab_hash + ") than " +
                now.model.file + " (" + std::to_string(now.model.n_vocab) + " tokens, vocab_hash " +
                now.model.vocab_hash + "): its ids mean other tokens and cannot be compared; check against a file "
                "saved with this model, or save one with --save");
  }
  std::printf("strata gate: checking %s (saved by strata %s on %s, %d ids per prompt)\n", check_file.c_str(),
              saved->strata_version.c_str(), saved->backend.c_str(), saved->n_predict);
  const std::vector<std::string> model_diff = gate::model_differences(saved->model, now.model);
  if (model_diff.empty()) {
    std::printf("model: %s, same as saved\n", now.model.file.c_str());
  } else {
    print_list("model differs from the saved run's (same vocabulary, so compared anyway):", model_diff);
  }
  if (saved->backend != now.backend) {
    std::printf("backend differs from the saved run's: saved %s, now %s\n", saved->backend.c_str(), now.backend.c_str());
  } else {
    std::printf("backend: %s, same as saved\n", now.backend.c_str());
  }
  const std::vector<std::string> launch_diff = gate::launch_differences(saved->launch_json, now.launch_json);
  if (launch_diff.empty()) {
    std::printf("launch: same as saved\n");
  } else {
    print_list("launch differs from the saved run's (reported, not refused):", launch_diff);
  }
  if (p.given("--n-predict") && n_tokens > saved->n_predict) {
    std::printf("n: -n %lld is more than the %d ids saved per prompt: comparing those\n", n_tokens, saved->n_predict);
  } else if (n != saved->n_predict) {
    std::printf("n: saved %d, now %d: comparing the first %d ids of each prompt\n", saved->n_predict, n, n);
  }
  size_t passed = 0;
  for (const gate::Case& s : saved->cases) {
    const gate::Case c =
        gate::run_case(*engine, {s.name, s.text, s.images}, n, s.cut_from > 0 ? s.prompt_ids.size() : 0, projector.get());
    const gate::Verdict v = gate::compare_case(s, c, static_cast<size_t>(n));
    if (v.kind == gate::Verdict::Kind::Pass) ++passed;
    std::printf("%s: %s\n", s.name.c_str(), gate::verdict_text(v, s, c, tok).c_str());
  }
  const bool all = passed == saved->cases.size();
  std::printf("strata gate: %s: %zu of %zu prompts pass\n", all ? "PASS" : "FAIL", passed, saved->cases.size());
  std::fflush(stdout);
  return all ? 0 : 1;
}

}  // namespace strata::cli
