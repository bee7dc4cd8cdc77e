// The request parser: a body's JSON text in, a validated request out, or the OpenAI-style error to answer with.
// A pure function of its input (no engine, no tokenizer): what needs the vocabulary (the prompt's length against
// the context, token ids) is checked by the server after it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "strata/serve/api_error.hpp"

namespace strata::serve {

enum class Endpoint {
  ChatCompletions,  // POST /v1/chat/completions
  Completions,      // POST /v1/completions
};

// tool_choice: "auto" (the default: the model may call an offered tool) or "none" (the tools are not offered
// and nothing is parsed as a call). "required" and a named function are refused until constrained decoding
// exists: nothing could make the model call a tool.
enum class ToolChoice { Auto, None };

// An image_url content part: the image's bytes (from its data URL) and the field that sent it, for messages.
struct ImagePart {
  std::vector<uint8_t> bytes;
  std::string param;  // "messages[1].content[0].image_url.url"
  std::string url;    // the data URL as sent (what the elastic desk's engine lanes are given)
};

struct CompletionRequest {
  Endpoint endpoint = Endpoint::ChatCompletions;
  // Chat: the messages, each with its role and its content as one string (text parts joined, each image_url part
  // as "<__media__>") or null, tool calls' string arguments parsed into objects (chat templates index them); other
  // fields as sent.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::vector<ImagePart> images;  // the image_url parts, in the order of their markers
  nlohmann::ordered_json tools;  // the tools array, or null
  ToolChoice tool_choice = ToolChoice::Auto;
  bool parallel_tool_calls = true;  // false: the reply's first tool call only
  std::string prompt;    // completions
  // Unset: the launch's value.
  std::optional<int> max_tokens;  // max_tokens, or max_completion_tokens when given
  std::optional<double> temperature, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty;
  // logit_bias: (token id, bias) sorted by id; the ids are checked against the vocabulary by the server.
  std::vector<std::pair<int64_t, double>> logit_bias;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
  bool logprobs = false;
  int top_logprobs = 0;
  std::optional<double> pcie_frac;  // the engine's request option (hybrid path): share of misses over PCIe
  // `speculative`: false (0: off for this request) or {"n_max": N} (1..31); nullopt: the launch's default.
  std::optional<int> speculative_n_max;
};

struct TemplateRequest {  // POST /apply-template
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // as CompletionRequest's
  nlohmann::ordered_json tools;
  bool add_generation_prompt = true;
};

struct TokenizeRequest {  // POST /tokenize
  std::string content;
  bool add_special = false;  // add BOS (and EOS) where the vocabulary does
  bool parse_special = true;  // control tokens' texts ("<|im_start|>") become those tokens
  bool with_pieces = false;   // answer {"id", "piece"} objects instead of ids
};

struct DetokenizeRequest {  // POST /detokenize
  std::vector<int64_t> tokens;  // checked against the vocabulary by the server
};

template <typename T>
using Parsed = std::variant<T, ApiError>;

// `served_model`: the name /v1/models lists; a request naming another model gets 404 model_not_found (the
// model's file name is accepted too).
Parsed<CompletionRequest> parse_completion_request(Endpoint endpoint, std::string_view body,
                                                   std::string_view served_model);
Parsed<TemplateRequest> parse_template_request(std::string_view body);
Parsed<TokenizeRequest> parse_tokenize_request(std::string_view body);
Parsed<DetokenizeRequest> parse_detokenize_request(std::string_view body);

}  // namespace strata::serve
