// `strata serve`: an OpenAI-compatible HTTP server (cpp-httplib). HTTP threads parse and check requests, render and
// encode prompts, and queue them with a JobRunner: one engine thread in this process (EngineWorker), or the elastic
// pair's desk of engine processes (ElasticDesk, serve.elastic.lanes 2), which streams the tokens back the same way. Endpoints: POST /v1/chat/completions, /v1/completions, /tokenize, /detokenize,
// /apply-template; GET /v1/models, /health, /metrics, /live and / (the page).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "strata/config.hpp"
#include "strata/engine.hpp"
#include "strata/model.hpp"
#include "strata/sampling.hpp"
#include "strata/speculative.hpp"
#include "strata/vision.hpp"
#include "strata/serve/job_runner.hpp"
#include "strata/serve/metrics.hpp"

namespace strata::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  std::optional<std::string> api_key;  // set: every endpoint but / and /health needs `Authorization: Bearer KEY`
  size_t queue = 64;                   // requests waiting beyond the running one
  double request_timeout_s = 600;
  double idle_timeout_s = 30;          // keep-alive; 0 closes each connection after its request
  uint64_t max_body = 8u << 20;
  std::string model_name;              // what /v1/models lists and requests may name
  SamplingParams sampling;             // defaults a request overrides
  int max_tokens = 256;                // default max_tokens (-1: until end of text or the context is full)
  // Speculative decoding (speculative.*): the engine's draft (null: off; the server does not own it), the launch's
  // n_max, and the most a request's {"n_max": N} may ask (the engine's verify windows hold n_max + 1 tokens).
  Draft* draft = nullptr;
  uint32_t draft_n_max = 0;
  uint32_t draft_n_limit = 0;
  bool draft_in_lanes = false;  // the elastic desk: its engines decode with the launch's draft themselves
  // The vision projector (mmproj) that turns image_url parts into rows, not owned; null: images are refused.
  const vision::Projector* projector = nullptr;
};

// The launch's serve and sampling sections; the model's name is its file name without .gguf.
ServerOptions server_options_from(const config::Launch& launch);

class Server {
 public:
  // Jobs run on `engine`, in this process (EngineWorker).
  Server(Engine& engine, ServerOptions options);
  // Jobs run by the runner `make_runner` builds with the server's metrics (the elastic desk); `model` gives the
  // tokenizer and the chat template, `context` the positions a prompt and its reply must fit in. `model` must
  // outlive the server. Throws what make_runner throws.
  using RunnerFactory = std::function<std::unique_ptr<JobRunner>(ServerMetrics&)>;
  Server(const Model& model, uint32_t context, const RunnerFactory& make_runner, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port and returns the port (the one picked when port is 0). Throws strata::Error.
  int bind();
  // Serves until stop(); returns then.
  void listen();
  // From any thread (not a signal handler): cancels the running request, answers the waiting ones 503, stops
  // listening. listen() then returns.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::serve
