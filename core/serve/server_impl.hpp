// The server's parts, shared by its source files (routes and checks in server.cpp, the completion endpoints in
// completion_handler.cpp). Private to core/serve/: it is the one place that includes httplib.
#pragma once

#include <httplib.h>

#include <atomic>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "strata/serve/chat_prompt.hpp"
#include "strata/serve/engine_worker.hpp"
#include "strata/serve/metrics.hpp"
#include "strata/serve/request.hpp"
#include "strata/serve/server.hpp"
#include "strata/tool_calls.hpp"

namespace strata::serve {

struct Server::Impl {
  Impl(const Model& model, uint32_t context, const RunnerFactory& make_runner, ServerOptions options);

  void add_routes();
  void completion(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  // The request's images decoded and preprocessed into the job (the engine's thread encodes them), and the prompt
  // with their tokens placed at the rendered text's markers; an ApiError (400) for an image that does not decode
  // or a server without a projector.
  std::optional<ApiError> place_images(const CompletionRequest& r, const std::string& rendered, Job& job);
  ServeGauges gauges(const ExpertUsage& usage) const;

  const Model& model;
  uint32_t context;  // positions a prompt and its reply must fit in (runtime.context)
  ServerOptions options;
  ServerMetrics metrics;
  ChatPrompt chat;
  chat::ToolCallFormat tool_format;
  // Test hook STRATA_TEST_FORCED_REPLY=TEXT: every reply is TEXT's tokens then end of text, whatever the model
  // says (each job's SamplingParams::forced); empty without it.
  std::vector<TokenId> forced_reply;
  std::unique_ptr<JobRunner> runner;  // after metrics, which it records into
  httplib::Server http;
  int64_t created = 0;  // Unix time of the start: /v1/models' created, and part of every reply id
  int port = 0;         // where it listens, once bound
  std::atomic<uint64_t> next_reply{0};
};

// Every JSON body goes through here: invalid UTF-8 (a token's partial bytes) becomes U+FFFD instead of throwing.
std::string json_text(const nlohmann::ordered_json& value);
void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);
void send_error(httplib::Response& res, const ApiError& error);

}  // namespace strata::serve
