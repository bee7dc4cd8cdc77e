// `strata serve`: the OpenAI-compatible HTTP server on the launch's engine (core/serve/). It prints one line to
// stderr when it listens, and SIGINT or SIGTERM stop it cleanly (the running request is cancelled, waiting ones
// get 503) with exit 0. With serve.elastic.lanes 2 the engines are two `strata engine` processes behind the elastic
// desk, and this process loads the model's file only for its tokenizer and chat template.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "projector_launch.hpp"
#include "strata/engine.hpp"
#include "strata/model.hpp"
#include "strata/serve/desk_lanes.hpp"
#include "strata/serve/elastic_desk.hpp"
#include "strata/speculative.hpp"
#include "strata/serve/server.hpp"

namespace strata::cli {

int cmd_serve(const Args& args) {
  ArgParser p("strata serve", "[--config FILE | --model FILE] [--host HOST] [--port PORT] [options]",
              "Serves the model over HTTP with OpenAI's API: POST /v1/chat/completions and /v1/completions\n"
              "(streamed as server-sent events with \"stream\": true), GET /v1/models, /health, /metrics\n"
              "(Prometheus), /live, and POST /tokenize, /detokenize, /apply-template. One request generates at a\n"
              "time; the others wait in a queue of serve.queue (then 503). The KV slots (runtime.slots) keep the\n"
              "last conversations, whose longest common prefix with a new prompt is not fed again.\n"
              "Launch keys: serve.host, serve.port, serve.api_key, serve.queue, serve.request_timeout_s,\n"
              "serve.idle_timeout_s, serve.max_body; sampling.* are the defaults a request overrides.\n"
              "serve.elastic.lanes 2 serves two requests at once with two `strata engine` processes: the helper\n"
              "starts for a second request and ends after serve.elastic.hold_s idle (docs/ARCHITECTURE.md).\n"
              "With --mmproj (or mmproj: in the launch), chat messages may hold OpenAI image_url parts (data URLs).\n"
              "When it listens, one line goes to stderr: 'strata serve: listening on http://HOST:PORT'.");
  LaunchOptions launch_options;
  launch_options.declare(p);
  std::string model, host, backend;
  long long port = 0;
  p.option("-m|--model", "FILE", "the GGUF model (overrides the launch's model)", &model);
  p.option("--host", "HOST", "address to listen on (overrides serve.host; default 127.0.0.1)", &host);
  p.option("--port", "PORT", "TCP port (overrides serve.port; 0 = any free port)",
           [&](const std::string& v) { port = parse_int("--port", v, 0, 65535); });
  p.option("--backend", "NAME", "auto, reference, or a backend plugin's name (overrides the launch)", &backend);
  std::string mmproj;
  p.option("--mmproj", "FILE",
           "the model's vision projector (mmproj GGUF): chat messages may then hold image_url parts (data URLs); "
           "overrides the launch's mmproj",
           &mmproj);
  if (!p.parse(args)) return 0;

  LaunchContext ctx = launch_options.resolve(false);
  config::Launch& launch = ctx.launch;
  if (p.given("--model")) launch.model = std::filesystem::absolute(model).string();
  if (p.given("--backend")) launch.backend = backend;
  if (p.given("--mmproj")) launch.mmproj = std::filesystem::absolute(mmproj).string();
  if (!launch.model) throw UsageError("'strata serve' needs a model: --model FILE, or a launch (--config) with model:");
  serve::ServerOptions options = serve::server_options_from(launch);
  if (p.given("--host")) options.host = host;
  if (p.given("--port")) options.port = static_cast<int>(port);

  // SIGINT and SIGTERM are taken by one thread (sigwait), so every thread started below inherits them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not the end of the process

  std::unique_ptr<Engine> engine;
  std::unique_ptr<Model> tokenizer_model;  // lanes 2: the model's file for its tokenizer and chat template
  std::unique_ptr<Draft> draft;            // speculative.draft: the engine's drafts (outlives the server)
  std::unique_ptr<vision::Projector> projector;  // mmproj: image_url parts (outlives the server)
  std::unique_ptr<serve::Server> server_holder;
  if (launch.serve.elastic.lanes == 2) {
    // The lanes load the launch the way this command did: the same file, the same -o, then the flags given here.
    std::vector<std::string> launch_arguments;
    if (!launch_options.config_file().empty()) {
      launch_arguments.insert(launch_arguments.end(),
                              {"--config", std::filesystem::absolute(launch_options.config_file()).string()});
    }
    for (const std::string& o : launch_options.overrides()) launch_arguments.insert(launch_arguments.end(), {"-o", o});
    launch_arguments.insert(launch_arguments.end(), {"--model", *launch.model});
    if (p.given("--mmproj")) launch_arguments.insert(launch_arguments.end(), {"--mmproj", *launch.mmproj});
    if (p.given("--backend")) launch_arguments.insert(launch_arguments.end(), {"-o", "backend=" + backend});
    const serve::DeskLanes lanes = serve::desk_lanes(launch, serve::desk_engine_executable(), launch_arguments,
                                                     serve::desk_link_file());
    serve::DeskOptions desk;
    desk.lead = lanes.lead;
    desk.helper = lanes.helper;
    desk.linked = !lanes.link_file.empty();
    desk.link_file = lanes.link_file;
    desk.hold_s = launch.serve.elastic.hold_s;
    desk.queue = options.queue;
    desk.pool_hold = serve::default_pool_hold();
    desk.sampling = options.sampling;
    options.draft_in_lanes = launch.speculative.draft != config::DraftKind::Off;
    tokenizer_model = Model::load(*launch.model);
    // mmproj: this process places an image's tokens (its resized size gives their number); the lanes encode it.
    projector = load_projector(launch.mmproj, *tokenizer_model);
    options.projector = projector.get();
    const Tokenizer& tokenizer = tokenizer_model->tokenizer();
    server_holder = std::make_unique<serve::Server>(
        *tokenizer_model, static_cast<uint32_t>(launch.runtime.context),
        [&](serve::ServerMetrics& metrics) { return std::make_unique<serve::ElasticDesk>(tokenizer, desk, metrics); },
        options);
  } else {
    engine = Engine::from_launch(launch);
    draft = make_draft(launch, *engine);
    if (draft) {
      options.draft = draft.get();
      options.draft_n_max = static_cast<uint32_t>(launch.speculative.n_max);
      options.draft_n_limit = engine->settings().max_window_logits - 1;
    }
    projector = load_projector(launch.mmproj, engine->model());
    options.projector = projector.get();
    server_holder = std::make_unique<serve::Server>(*engine, options);
  }
  serve::Server& server = *server_holder;
  const int bound = server.bind();
  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  const bool v6 = options.host.find(':') != std::string::npos;
  std::fprintf(stderr, "strata serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", options.host.c_str(),
               v6 ? "]" : "", bound);
  std::fflush(stderr);
  server.listen();
  // listen() also returns when it could not serve; wake the waiter then.
  pthread_kill(signal_waiter.native_handle(), SIGTERM);
  signal_waiter.join();
  return 0;
}

}  // namespace strata::cli
