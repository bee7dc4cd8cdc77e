#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "server_impl.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/serve/page.hpp"
#include "strata/serve/peer_watch.hpp"
#include "strata/serve/request.hpp"

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kJson = "application/json";

// Routes by the path label /metrics counts them under (anything else is "other", so the label set stays small).
constexpr std::string_view kRoutes[] = {"/",         "/health",        "/live",       "/metrics",
                                        "/v1/models", "/v1/completions", "/v1/chat/completions",
                                        "/tokenize", "/detokenize",    "/apply-template"};

std::string route_label(const std::string& path) {
  for (std::string_view r : kRoutes) {
    if (path == r) return path;
  }
  return "other";
}

// Compares every byte whatever the first difference, so that the time taken does not tell how much matched.
bool same_key(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned>(given[i] ^ key[i]);
  return diff == 0;
}

template <typename T>
bool take(Parsed<T>& parsed, httplib::Response& res) {
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) {
    send_error(res, *e);
    return false;
  }
  return true;
}

// The test hook's forced reply: the text's tokens (special tokens matched, no BOS) and end of text.
std::vector<TokenId> forced_reply_from_env(const Tokenizer& tok) {
  const char* text = std::getenv("STRATA_TEST_FORCED_REPLY");
  if (text == nullptr || *text == '\0') return {};
  std::vector<TokenId> ids = tok.encode(text, {.add_bos = false, .add_eos = false, .parse_special = true});
  if (tok.eos() != kNoToken) ids.push_back(tok.eos());
  log::warn("strata serve: STRATA_TEST_FORCED_REPLY is set (a test hook): every reply is its " +
            std::to_string(ids.size()) + " tokens, whatever the model says");
  return ids;
}

}  // namespace

std::string json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(json_text(body), kJson);
}

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(error_body(error), kJson);
  if (error.status == 503) res.set_header("Retry-After", "1");
}

ServerOptions server_options_from(const config::Launch& launch) {
  ServerOptions o;
  o.host = launch.serve.host;
  o.port = launch.serve.port;
  if (launch.serve.api_key && !launch.serve.api_key->empty()) o.api_key = launch.serve.api_key;
  o.queue = static_cast<size_t>(launch.serve.queue);
  o.request_timeout_s = launch.serve.request_timeout_s;
  o.idle_timeout_s = launch.serve.idle_timeout_s;
  o.max_body = launch.serve.max_body;
  if (launch.model) o.model_name = std::filesystem::path(*launch.model).stem().string();
  o.sampling = sampling_from(launch.sampling);
  o.max_tokens = launch.sampling.n_predict;
  return o;
}

Server::Impl::Impl(const Model& m, uint32_t n_ctx, const RunnerFactory& make_runner, ServerOptions o)
    : model(m),
      context(n_ctx),
      options(std::move(o)),
      chat(m),
      tool_format(chat::detect_tool_call_format(chat.template_source())),
      forced_reply(forced_reply_from_env(m.tokenizer())),
      runner(make_runner(metrics)),
      created(static_cast<int64_t>(std::time(nullptr))) {
  // A thread per connection waiting in the queue, and some for the quick endpoints.
  const size_t threads = std::min<size_t>(options.queue + 8, 512);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_payload_max_length(static_cast<size_t>(options.max_body));
  if (options.idle_timeout_s > 0) {
    http.set_keep_alive_timeout(static_cast<time_t>(std::ceil(options.idle_timeout_s)));
  } else {
    http.set_keep_alive_max_count(1);
  }
  add_routes();
}

ServeGauges Server::Impl::gauges(const ExpertUsage& usage) const {
  return {runner->queued(), runner->active(), &usage};
}

void Server::Impl::add_routes() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!options.api_key || req.path == "/" || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (auth.starts_with(kBearer) && same_key(std::string_view(auth).substr(kBearer.size()), *options.api_key)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, {401, "a valid API key is needed: send 'Authorization: Bearer KEY' (serve.api_key)",
                     "invalid_request_error", {}, "invalid_api_key"});
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors httplib answers itself (no route, a body over serve.max_body) get an OpenAI error body too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                      httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      send_error(res, {413, "the body is larger than serve.max_body (" + std::to_string(options.max_body) + " bytes)",
                       "invalid_request_error", {}, "body_too_large"});
    } else if (res.status == 404) {
      send_error(res, {404, "no endpoint " + req.method + " " + req.path, "invalid_request_error", {}, "not_found"});
    } else {
      send_error(res, {res.status, "the request could not be served (HTTP " + std::to_string(res.status) + ")",
                       res.status >= 500 ? "server_error" : "invalid_request_error", {}, {}});
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log::error("strata serve: " + what);
    send_error(res, {500, "internal error: " + what, "server_error", {}, {}});
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.count_request(route_label(req.path), res.status);
  });

  http.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const json entry = {{"id", options.model_name},
                        {"object", "model"},
                        {"created", created},
                        {"owned_by", "strata"},
                        {"context_length", context}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({entry})}});
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const ExpertUsage usage = runner->expert_usage();
    res.set_content(metrics.prometheus(gauges(usage)), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/live", [this](const httplib::Request&, httplib::Response& res) {
    const ExpertUsage usage = runner->expert_usage();
    res.set_content(metrics.live(gauges(usage), options.model_name).dump(-1, ' ', false,
                                                                         nlohmann::json::error_handler_t::replace),
                    kJson);
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(page_html()), "text/html; charset=utf-8");
  });

  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completion(Endpoint::ChatCompletions, req, res);
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    completion(Endpoint::Completions, req, res);
  });
  http.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    Parsed<TemplateRequest> parsed = parse_template_request(req.body);
    if (!take(parsed, res)) return;
    const TemplateRequest& r = std::get<TemplateRequest>(parsed);
    try {
      send_json(res, 200, {{"prompt", chat.render(r.messages, r.tools, r.add_generation_prompt)}});
    } catch (const chat::TemplateError& e) {
      send_error(res, invalid_request(std::string("the chat template rejected the messages: ") + e.what(), "messages",
                                      "template_error"));
    }
  });
  http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    Parsed<TokenizeRequest> parsed = parse_tokenize_request(req.body);
    if (!take(parsed, res)) return;
    const TokenizeRequest& r = std::get<TokenizeRequest>(parsed);
    const Tokenizer& tok = model.tokenizer();
    const std::vector<TokenId> ids =
        tok.encode(r.content, {.add_bos = r.add_special, .add_eos = r.add_special, .parse_special = r.parse_special});
    json tokens = json::array();
    for (const TokenId id : ids) {
      if (r.with_pieces) {
        tokens.push_back({{"id", id}, {"piece", tok.piece(id)}});
      } else {
        tokens.push_back(id);
      }
    }
    send_json(res, 200, {{"tokens", tokens}});
  });
  http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    Parsed<DetokenizeRequest> parsed = parse_detokenize_request(req.body);
    if (!take(parsed, res)) return;
    const Tokenizer& tok = model.tokenizer();
    std::vector<TokenId> ids;
    for (const int64_t id : std::get<DetokenizeRequest>(parsed).tokens) {
      if (id < 0 || static_cast<uint64_t>(id) >= tok.size()) {
        send_error(res, invalid_request("token " + std::to_string(id) + " is not in the vocabulary (0.." +
                                            std::to_string(tok.size() - 1) + ")",
                                        "tokens"));
        return;
      }
      ids.push_back(static_cast<TokenId>(id));
    }
    send_json(res, 200, {{"content", tok.decode(ids)}});
  });
}

Server::Server(Engine& engine, ServerOptions options) {
  const size_t queue = options.queue;
  impl_ = std::make_unique<Impl>(
      engine.model(), engine.settings().context,
      [&engine, queue](ServerMetrics& metrics) { return std::make_unique<EngineWorker>(engine, queue, metrics); },
      std::move(options));
}

Server::Server(const Model& model, uint32_t context, const RunnerFactory& make_runner, ServerOptions options)
    : impl_(std::make_unique<Impl>(model, context, make_runner, std::move(options))) {}

Server::~Server() { stop(); }

int Server::bind() {
  const ServerOptions& o = impl_->options;
  const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) {
    throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) +
                " (serve.host, serve.port): the address is in use or not this machine's");
  }
  impl_->port = port;
  return port;
}

void Server::listen() { impl_->http.listen_after_bind(); }

void Server::stop() {
  impl_->runner->stop();
  impl_->http.stop();
  // httplib waits out an idle keep-alive connection (serve.idle_timeout_s) before its threads end; ending their read
  // side lets them go at once, while a response still being written finishes.
  if (impl_->port > 0) end_connection_reads(impl_->port);
}

}  // namespace strata::serve
