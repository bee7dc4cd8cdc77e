// libFuzzer target for the server's request parser: any body gives a request or an error, never an exception or
// a crash. An error has a 4xx status and a message, and its body is valid JSON; an accepted request keeps the
// parser's promises (a chat request has messages, each with a role and string or null content; sampling values
// in range, logit_bias sorted with one entry per id; n = 1 implied).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "strata/serve/request.hpp"

namespace serve = strata::serve;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_error(const serve::ApiError& e) {
  require(e.status >= 400 && e.status < 500);
  require(!e.message.empty());
  const nlohmann::json body = nlohmann::json::parse(serve::error_body(e), nullptr, false);
  require(body.is_object() && body.contains("error") && body["error"]["message"].is_string());
}

void check_completion(const serve::Parsed<serve::CompletionRequest>& parsed, serve::Endpoint endpoint) {
  if (const auto* e = std::get_if<serve::ApiError>(&parsed)) return check_error(*e);
  const serve::CompletionRequest& r = std::get<serve::CompletionRequest>(parsed);
  if (endpoint == serve::Endpoint::ChatCompletions) {
    require(r.messages.is_array() && !r.messages.empty());
    for (const auto& m : r.messages) {
      require(m.is_object() && m["role"].is_string());
      require(m["content"].is_string() || m["content"].is_null());
    }
    require(r.tools.is_null() || r.tools.is_array());
  }
  require(!r.max_tokens || *r.max_tokens >= 1);
  require(!r.temperature || (*r.temperature >= 0 && *r.temperature <= 2));
  require(!r.top_p || (*r.top_p >= 0 && *r.top_p <= 1));
  require(!r.pcie_frac || (*r.pcie_frac >= 0 && *r.pcie_frac <= 1));
  require(r.top_logprobs >= 0 && r.top_logprobs <= 20);
  require(!r.include_usage || r.stream);
  require(!r.frequency_penalty || (*r.frequency_penalty >= -2 && *r.frequency_penalty <= 2));
  require(!r.presence_penalty || (*r.presence_penalty >= -2 && *r.presence_penalty <= 2));
  for (size_t i = 0; i < r.logit_bias.size(); ++i) {
    require(r.logit_bias[i].first >= 0 && r.logit_bias[i].second >= -100 && r.logit_bias[i].second <= 100);
    require(i == 0 || r.logit_bias[i - 1].first < r.logit_bias[i].first);  // sorted, one entry per id
  }
}

template <typename T>
void check_other(const serve::Parsed<T>& parsed) {
  if (const auto* e = std::get_if<serve::ApiError>(&parsed)) check_error(*e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (const serve::Endpoint e : {serve::Endpoint::ChatCompletions, serve::Endpoint::Completions}) {
    check_completion(serve::parse_completion_request(e, body, "model"), e);
  }
  check_other(serve::parse_template_request(body));
  check_other(serve::parse_tokenize_request(body));
  check_other(serve::parse_detokenize_request(body));
  return 0;
}
