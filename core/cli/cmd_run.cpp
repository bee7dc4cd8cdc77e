// `strata run`: generate text from a prompt on the launch's backend, streaming it to stdout, with a summary line
// (prompt and decode speed, tokens, peak memory) on stderr. --json makes stdout one JSON object instead.
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "projector_launch.hpp"
#include "run_chat.hpp"
#include "strata/engine.hpp"
#include "strata/generate.hpp"
#include "strata/process_memory.hpp"
#include "strata/prompt_images.hpp"
#include "strata/speculative.hpp"
#include "strata/startup_clock.hpp"
#include "strata/steady_seconds.hpp"
#include "strata/vision.hpp"

namespace strata::cli {
namespace {

std::string read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read --file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int cmd_run(const Args& args) {
  ArgParser p("strata run", "[--config FILE] [--model FILE] (--prompt TEXT | --file FILE | --chat) [options]",
              "Generates text from a raw prompt (no chat template): BOS and the vocabulary's dummy-prefix space are\n"
              "added, the prompt is fed in chunks of runtime.batch tokens, then tokens are sampled with the\n"
              "launch's sampling settings and streamed to stdout (the prompt first, as its tokens decode). A summary\n"
              "line goes to stderr, and a startup line: the time from the process's start to a ready engine and to\n"
              "the first token, by phase (backend, map, weights, host copy, cache fill, probe). Flags override the launch (--config, then -o, then these).\n\n"
              "--json: stdout is exactly one JSON object {\"prompt_ids\": [...], \"generated_ids\": [...], \"text\": "
              "\"...\"}\nwhere text is the generated text without the prompt; everything else goes to stderr.\n\n"
              "--chat: a conversation instead, a user turn per line of stdin, each reply on stdout, rendered with\n"
              "the model's chat template (ChatML when it has none) and kept in the KV between turns; --system TEXT\n"
              "is a first system message.\n\n"
              "Speculative decoding (-o speculative.draft=ngram|model, speculative.n_max, speculative.model): each\n"
              "decode step is a verify window of the pending token and the drafted ones; the ids are the same as\n"
              "without it at temperature 0, and the summary line adds `drafted D, accepted A`.\n\n"
              "Images (a Qwen3-VL model): --mmproj FILE (its vision projector) and one --image FILE (PNG, JPEG or\n"
              "PPM) per <__media__> marker in the prompt, in order; without markers the images come first.");
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model, prompt, file, backend;
  long long n_predict = 0, seed = 0;
  double temperature = 0;
  bool json = false, chat = false;
  std::string system;
  std::vector<std::string> stops;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's model)", &model);
  p.option("-p|--prompt", "TEXT", "the prompt", &prompt);
  p.option("-f|--file", "FILE", "read the prompt from this file (its bytes exactly)", &file);
  p.option("-n|--n-predict", "N", "tokens to generate (-1: until end of text or the context is full)",
           [&](const std::string& v) { n_predict = parse_int("--n-predict", v, -1, 1LL << 31); });
  p.option("--temperature", "T", "0 = greedy", [&](const std::string& v) {
    temperature = parse_double("--temperature", v, 0.0, 100.0);
  });
  p.option("--seed", "N", "sampling seed", [&](const std::string& v) { seed = parse_int("--seed", v, 0, LLONG_MAX); });
  p.option("--backend", "NAME", "auto, reference, or a backend plugin's name (overrides the launch)", &backend);
  p.repeated("--stop", "TEXT", "stop when the generated text contains TEXT", &stops);
  p.flag("--json", "print one JSON object (prompt_ids, generated_ids, text) instead of streaming text", &json);
  p.flag("--chat", "an interactive conversation on stdin and stdout (chat template, KV kept between turns)", &chat);
  p.option("--system", "TEXT", "with --chat: the system message", &system);
  std::string mmproj;
  std::vector<std::string> image_files;
  p.option("--mmproj", "FILE", "the vision projector (mmproj GGUF) for --image (overrides the launch's mmproj)", &mmproj);
  p.repeated("--image", "FILE", "an image for the prompt (PNG, JPEG or PPM; repeatable)", &image_files);
  bool profile_image = false;
  p.flag("--profile-image", "print where each image's encode went, op by op, on stderr (backend ops only)",
         &profile_image);
  if (!p.parse(args)) return 0;
  if (profile_image && image_files.empty()) throw UsageError("--profile-image goes with --image");
  if (chat && (p.given("--prompt") || p.given("--file") || json)) {
    throw UsageError("'strata run --chat' reads its turns from stdin: leave out --prompt, --file and --json");
  }
  if (!chat && p.given("--system")) throw UsageError("--system goes with --chat");
  if (!chat && p.given("--prompt") == p.given("--file")) {
    throw UsageError("'strata run' needs exactly one of --prompt TEXT and --file FILE");
  }
  if (p.given("--file")) prompt = read_prompt_file(file);
  if (!image_files.empty() && chat) throw UsageError("--image goes with --prompt or --file, not --chat");
  if (!mmproj.empty() && image_files.empty()) throw UsageError("--mmproj is for --image: give at least one image");

  LaunchContext ctx = launch_options.resolve(false);
  config::Launch& launch = ctx.launch;
  if (p.given("--model")) launch.model = std::filesystem::absolute(model).string();
  if (p.given("--mmproj")) launch.mmproj = std::filesystem::absolute(mmproj).string();
  if (!image_files.empty() && !launch.mmproj) {
    throw UsageError("--image needs the model's vision projector: --mmproj FILE, or mmproj: in the launch");
  }
  if (p.given("--backend")) launch.backend = backend;
  GenerateOptions gen;
  gen.sampling = sampling_from(launch.sampling);
  gen.n_predict = launch.sampling.n_predict;
  if (p.given("--n-predict")) gen.n_predict = static_cast<int>(n_predict);
  if (p.given("--temperature")) gen.sampling.temperature = static_cast<float>(temperature);
  if (p.given("--seed")) gen.sampling.seed = static_cast<uint64_t>(seed);
  gen.stop = stops;

  std::unique_ptr<Engine> engine = Engine::from_launch(launch);
  const std::unique_ptr<Draft> draft = make_draft(launch, *engine);
  gen.draft = draft.get();
  gen.draft_n_max = draft ? static_cast<uint32_t>(launch.speculative.n_max) : 0;
  // Each image through the projector (on the engine's backend, or the CPU encoder), its rows kept until generation
  // ends.
  std::vector<vision::Embeddings> encoded;
  if (!image_files.empty()) {
    const std::unique_ptr<vision::Projector> projector = load_projector(launch.mmproj, engine->model());
    for (const std::string& f : image_files) {
      const auto t0 = std::chrono::steady_clock::now();
      std::string where;
      OpProfile profile;
      encoded.push_back(encode_image(*engine, *projector, projector->preprocess(vision::load_image(f)), &where,
                                     profile_image ? &profile : nullptr));
      std::fprintf(stderr, "strata run: image %s: %zu tokens (%ux%u) encoded on %s in %.3f s\n", f.c_str(),
                   encoded.back().n_tokens(), encoded.back().nx, encoded.back().ny, where.c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (profile_image) {
        std::fprintf(stderr, "%s", profile.entries().empty()
                                       ? "strata run: --profile-image: the CPU encoder ran it (no backend ops to time)\n"
                                       : profile.table(encoded.back().n_tokens()).c_str());
      }
    }
    for (const vision::Embeddings& e : encoded) gen.images.push_back(Engine::ImageTokens{e.rows, e.nx, e.ny, e.n_pos});
  }
  if (chat) {
    run_chat(*engine, gen, system);
    return 0;
  }
  if (!json) {
    // The prompt as its tokens decode (each image as "[image NxM]"), then the generated text as it comes.
    const Tokenizer& tok = engine->model().tokenizer();
    std::vector<TokenId> ids = tok.encode(prompt, {.add_bos = false, .add_eos = false, .parse_special = false});
    std::string shown = tok.decode(ids);
    const bool marked = prompt.find(kMediaMarker) != std::string::npos;  // else the images come first
    for (size_t k = 0, at = 0; k < encoded.size(); ++k) {
      const std::string label = "[image " + std::to_string(encoded[k].nx) + "x" + std::to_string(encoded[k].ny) + "]";
      if (marked) {
        at = shown.find(kMediaMarker, at);
        if (at == std::string::npos) break;
        shown.replace(at, kMediaMarker.size(), label);
      } else {
        shown.insert(at, label);
      }
      at += label.size();
    }
    std::fputs(shown.c_str(), stdout);
    std::fflush(stdout);
  }
  const GenerateResult r = generate(*engine, 0, prompt, gen, [&](std::string_view text) {
    if (json) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (json) {
    const nlohmann::json out = {{"prompt_ids", r.prompt_ids}, {"generated_ids", r.generated_ids}, {"text", r.text}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  std::fprintf(stderr,
               "strata run: prompt %zu tokens in %.3f s (%.1f tokens/s), decode %zu tokens in %.3f s (%.1f tokens/s), "
               "generated %zu (%s), peak RSS %s (model file %s, KV cache %s), backend %s\n",
               r.prompt_ids.size(), r.prompt_seconds, per_second(r.prompt_ids.size(), r.prompt_seconds),
               r.decode_tokens, r.decode_seconds, per_second(r.decode_tokens, r.decode_seconds), r.generated_ids.size(),
               r.stop_reason.c_str(), format_mib(peak_resident_bytes()).c_str(),
               format_mib(engine->model().file_bytes()).c_str(), format_mib(engine->kv().bytes()).c_str(),
               engine->backend().describe().c_str());
  if (draft) {
    std::fprintf(stderr, "strata run: speculative %s (n_max %d): %s\n", std::string(draft->name()).c_str(),
                 launch.speculative.n_max, draft_summary(r.draft).c_str());
  }
  if (engine->hybrid()) {
    std::fprintf(stderr, "%s", engine->expert_summary(per_second(r.decode_tokens, r.decode_seconds)).c_str());
  }
  std::fprintf(stderr, "strata run: %s\n", startup::line(startup::report()).c_str());
  return 0;
}

}  // namespace strata::cli
