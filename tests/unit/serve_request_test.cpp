// The request parser: well-formed requests come out with every field read, and each kind of bad input gets its
// OpenAI-style error (status, param, code) instead of an exception.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "strata/serve/request.hpp"

namespace {

using strata::serve::ApiError;
using strata::serve::CompletionRequest;
using strata::serve::Endpoint;

constexpr const char* kModel = "stories260K";

CompletionRequest chat_ok(const std::string& body) {
  auto parsed = strata::serve::parse_completion_request(Endpoint::ChatCompletions, body, kModel);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) ADD_FAILURE() << body << " -> " << e->message;
  return std::holds_alternative<CompletionRequest>(parsed) ? std::get<CompletionRequest>(parsed) : CompletionRequest{};
}

ApiError rejected(Endpoint endpoint, const std::string& body) {
  auto parsed = strata::serve::parse_completion_request(endpoint, body, kModel);
  if (!std::holds_alternative<ApiError>(parsed)) {
    ADD_FAILURE() << "accepted: " << body;
    return {};
  }
  return std::get<ApiError>(parsed);
}

ApiError chat_rejected(const std::string& body) { return rejected(Endpoint::ChatCompletions, body); }

TEST(ServeRequest, ReadsAChatRequest) {
  const CompletionRequest r = chat_ok(R"({"model": "stories260K", "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
    "max_tokens": 12, "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.1, "seed": 42,
    "stop": ["\n", "END"], "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 3, "pcie_frac": 0.25, "user": "ignored"})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1]["content"], "Hi there");
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_DOUBLE_EQ(*r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*r.top_p, 0.9);
  EXPECT_EQ(r.top_k, 7);
  EXPECT_DOUBLE_EQ(*r.min_p, 0.1);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_DOUBLE_EQ(*r.pcie_frac, 0.25);
  EXPECT_TRUE(r.tools.is_null());
}

TEST(ServeRequest, DefaultsStayUnset) {
  const CompletionRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "Hi"}]})");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.temperature);
  EXPECT_FALSE(r.seed);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs);
  EXPECT_FALSE(r.pcie_frac);
  EXPECT_TRUE(r.stop.empty());
}

TEST(ServeRequest, MaxCompletionTokensWinsAndNullMeansUnset) {
  EXPECT_EQ(chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
                        "max_completion_tokens": 9})").max_tokens, 9);
  EXPECT_FALSE(chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "temperature": null})").temperature);
  EXPECT_EQ(chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "stop": "###"})").stop,
            (std::vector<std::string>{"###"}));
  EXPECT_EQ(chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 4.0})").max_tokens, 4);
}

TEST(ServeRequest, ToolCallArgumentsBecomeObjects) {
  const CompletionRequest r = chat_ok(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"]["city"], "Paris");
  EXPECT_TRUE(r.messages[1]["content"].is_null());
  ASSERT_TRUE(r.tools.is_array());
  EXPECT_EQ(r.tools[0]["function"]["name"], "get_weather");
}

TEST(ServeRequest, ReadsACompletionRequest) {
  auto parsed = strata::serve::parse_completion_request(Endpoint::Completions,
                                                        R"({"prompt": ["Once upon a time"], "logprobs": 2})", kModel);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(parsed));
  const CompletionRequest& r = std::get<CompletionRequest>(parsed);
  EXPECT_EQ(r.prompt, "Once upon a time");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
}

TEST(ServeRequest, MalformedBodiesAre400) {
  for (const char* body : {"", "{", "not json", "[1, 2]", "\"text\"", "{\"messages\": [}", "null"}) {
    const ApiError e = chat_rejected(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error") << body;
    EXPECT_EQ(e.code, "invalid_json") << body;
  }
  const ApiError deep = chat_rejected(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_EQ(deep.status, 400);
  EXPECT_NE(deep.message.find("nests deeper"), std::string::npos);
}

TEST(ServeRequest, WrongTypesName400WithTheParam) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": [1]})", "messages[0]"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,x", "detail": "max"}}]}]})",
       "messages[0].content[0].image_url.detail"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a <__media__> b"}]}]})",
       "messages[0].content[0].text"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": -0.1})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": "1"})", "seed"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [1]})", "stop[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})",
       "stream_options"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "pcie_frac": 1.5})", "pcie_frac"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 7})", "model"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages[0].tool_calls"},
  };
  for (const Case& c : cases) {
    const ApiError e = chat_rejected(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

// image_url parts: their data URLs' bytes in order, each part a marker in the content; anything but a data URL is
// a 400 naming the url (the server fetches nothing).
TEST(ServeRequest, ImageUrlPartsBecomeMarkersAndBytes) {
  const CompletionRequest r = chat_ok(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "text": "Compare "},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8=", "detail": "low"}},
                                   {"type": "text", "text": " with "},
                                   {"type": "image_url", "image_url": "data:image/jpeg;base64,d29ybGQ="}]}]})");
  EXPECT_EQ(r.messages[0]["content"], "Compare <__media__> with <__media__>");
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(std::string(r.images[0].bytes.begin(), r.images[0].bytes.end()), "hello");
  EXPECT_EQ(std::string(r.images[1].bytes.begin(), r.images[1].bytes.end()), "world");
  EXPECT_EQ(r.images[0].param, "messages[0].content[1].image_url.url");
  EXPECT_EQ(r.images[1].param, "messages[0].content[3].image_url");
  for (const char* url : {"https://example.com/cat.png", "http://x/y.jpg", "cat.png", "data:image/png;base64,a*b="}) {
    const std::string body = std::string(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": ")") +
                             url + R"("}}]}]})";
    const ApiError e = chat_rejected(body);
    EXPECT_EQ(e.status, 400) << url;
    EXPECT_EQ(e.code, "invalid_image_url") << url;
    EXPECT_EQ(e.param, "messages[0].content[0].image_url.url") << url;
  }
  EXPECT_NE(chat_rejected(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://a/b.png"}}]}]})")
                .message.find("fetches nothing"),
            std::string::npos);
}

TEST(ServeRequest, PenaltiesLogitBiasAndToolChoice) {
  const CompletionRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "x"}],
      "frequency_penalty": -2, "presence_penalty": 1.5, "logit_bias": {"300": 5, "7": -100, "0": 0.5},
      "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none",
      "parallel_tool_calls": false, "response_format": {"type": "text"}, "n": 1,
      "user": "u", "metadata": {"a": "b"}, "store": false, "service_tier": "auto", "safety_identifier": "s",
      "prompt_cache_key": "k", "prediction": {"type": "content", "content": "x"}, "modalities": ["text"]})");
  EXPECT_DOUBLE_EQ(*r.frequency_penalty, -2.0);
  EXPECT_DOUBLE_EQ(*r.presence_penalty, 1.5);
  EXPECT_EQ(r.logit_bias, (std::vector<std::pair<int64_t, double>>{{0, 0.5}, {7, -100.0}, {300, 5.0}}));
  EXPECT_EQ(r.tool_choice, strata::serve::ToolChoice::None);
  EXPECT_FALSE(r.parallel_tool_calls);
  const CompletionRequest d = chat_ok(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto"})");
  EXPECT_EQ(d.tool_choice, strata::serve::ToolChoice::Auto);
  EXPECT_TRUE(d.parallel_tool_calls);
  EXPECT_FALSE(d.frequency_penalty);
  EXPECT_TRUE(d.logit_bias.empty());
}

// What would change a reply's meaning and cannot be honoured is refused by name, never ignored.
TEST(ServeRequest, FieldsThatCannotBeHonouredAre400NamingThem) {
  struct Case {
    Endpoint endpoint;
    const char* extra;  // added to a valid body
    const char* param;
    const char* code;
  };
  const Endpoint chat = Endpoint::ChatCompletions, text = Endpoint::Completions;
  const Case cases[] = {
      {chat, R"("response_format": {"type": "json_object"})", "response_format", "unsupported_value"},
      {chat, R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}})",
       "response_format", "unsupported_value"},
      {chat, R"("response_format": {"type": "yaml"})", "response_format", "invalid_value"},
      {chat, R"("response_format": "json")", "response_format", "invalid_type"},
      {chat, R"("n": 2)", "n", "unsupported_value"},
      {text, R"("n": 3)", "n", "unsupported_value"},
      {chat, R"("tool_choice": "required")", "tool_choice", "unsupported_value"},
      {chat, R"("tool_choice": {"type": "function", "function": {"name": "f"}})", "tool_choice", "unsupported_value"},
      {chat, R"("tool_choice": "sometimes")", "tool_choice", "invalid_value"},
      {chat, R"("tool_choice": {"type": "function"})", "tool_choice", "invalid_value"},
      {chat, R"("tool_choice": 1)", "tool_choice", "invalid_type"},
      {chat, R"("parallel_tool_calls": "no")", "parallel_tool_calls", "invalid_type"},
      {chat, R"("frequency_penalty": 2.5)", "frequency_penalty", "invalid_value"},
      {chat, R"("presence_penalty": -3)", "presence_penalty", "invalid_value"},
      {text, R"("presence_penalty": "high")", "presence_penalty", "invalid_type"},
      {chat, R"("logit_bias": {"5": 101})", "logit_bias", "invalid_value"},
      {chat, R"("logit_bias": {"5": "a"})", "logit_bias", "invalid_value"},
      {chat, R"("logit_bias": {"-1": 1})", "logit_bias", "invalid_value"},
      {chat, R"("logit_bias": {"abc": 1})", "logit_bias", "invalid_value"},
      {chat, R"("logit_bias": {"7": 1, "007": 2})", "logit_bias", "invalid_value"},
      {text, R"("logit_bias": [1, 2])", "logit_bias", "invalid_type"},
      {chat, R"("functions": [{"name": "f"}])", "functions", "unsupported_parameter"},
      {chat, R"("function_call": "auto")", "function_call", "unsupported_parameter"},
      {chat, R"("audio": {"voice": "alloy", "format": "wav"})", "audio", "unsupported_parameter"},
      {chat, R"("modalities": ["text", "audio"])", "modalities", "unsupported_value"},
      {chat, R"("reasoning_effort": "low")", "reasoning_effort", "unsupported_parameter"},
      {chat, R"("verbosity": "low")", "verbosity", "unsupported_parameter"},
      {chat, R"("web_search_options": {})", "web_search_options", "unsupported_parameter"},
      {text, R"("best_of": 2)", "best_of", "unsupported_value"},
      {text, R"("echo": true)", "echo", "unsupported_value"},
      {text, R"("suffix": "end")", "suffix", "unsupported_parameter"},
      {chat, R"("grammar": "root ::= x")", "grammar", "unknown_parameter"},
      {chat, R"("prompt": "x")", "prompt", "unknown_parameter"},
      {text, R"("top_logprobs": 2)", "top_logprobs", "unknown_parameter"},
      {text, R"("tools": [])", "tools", "unknown_parameter"},
  };
  for (const Case& c : cases) {
    const std::string body = std::string(c.endpoint == chat ? R"({"messages": [{"role": "user", "content": "x"}], )"
                                                            : R"({"prompt": "x", )") +
                             c.extra + "}";
    const ApiError e = rejected(c.endpoint, body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, c.param) << body << ": " << e.message;
    EXPECT_EQ(e.code, c.code) << body << ": " << e.message;
    EXPECT_NE(e.message.find(c.param), std::string::npos) << "the message names the field: " << e.message;
  }
  // Their harmless values are accepted.
  auto ok = strata::serve::parse_completion_request(
      text, R"({"prompt": "x", "best_of": 1, "echo": false, "suffix": "", "user": "u", "unknown_but_null": null})",
      kModel);
  EXPECT_TRUE(std::holds_alternative<CompletionRequest>(ok)) << std::get<ApiError>(ok).message;
}

TEST(ServeRequest, EmptyOrMissingMessagesAre400) {
  EXPECT_EQ(chat_rejected(R"({"messages": []})").code, "empty_array");
  EXPECT_EQ(chat_rejected(R"({"model": "stories260K"})").code, "missing_required_parameter");
  EXPECT_EQ(rejected(Endpoint::Completions, R"({"messages": [{"role": "user", "content": "x"}]})").param, "prompt");
  EXPECT_EQ(rejected(Endpoint::Completions, R"({"prompt": ["a", "b"]})").param, "prompt");
}

TEST(ServeRequest, UnknownModelIs404) {
  const ApiError e = chat_rejected(R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_EQ(e.param, "model");
  chat_ok(R"({"model": "stories260K.gguf", "messages": [{"role": "user", "content": "x"}]})");
}

TEST(ServeRequest, ErrorBodyIsOpenAIShaped) {
  const std::string body = strata::serve::error_body(chat_rejected(R"({"messages": []})"));
  const nlohmann::json j = nlohmann::json::parse(body);
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_EQ(j["error"]["code"], "empty_array");
  EXPECT_TRUE(j["error"]["message"].is_string());
  const nlohmann::json no_param =
      nlohmann::json::parse(strata::serve::error_body(strata::serve::invalid_request("bad")));
  EXPECT_TRUE(no_param["error"]["param"].is_null());
  EXPECT_TRUE(no_param["error"]["code"].is_null());
}

TEST(ServeRequest, TemplateTokenizeAndDetokenizeBodies) {
  auto t = strata::serve::parse_template_request(
      R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})");
  ASSERT_TRUE(std::holds_alternative<strata::serve::TemplateRequest>(t));
  EXPECT_FALSE(std::get<strata::serve::TemplateRequest>(t).add_generation_prompt);
  EXPECT_TRUE(std::holds_alternative<ApiError>(strata::serve::parse_template_request(R"({"messages": []})")));

  auto k = strata::serve::parse_tokenize_request(R"({"content": "hi", "with_pieces": true})");
  ASSERT_TRUE(std::holds_alternative<strata::serve::TokenizeRequest>(k));
  EXPECT_TRUE(std::get<strata::serve::TokenizeRequest>(k).with_pieces);
  EXPECT_EQ(std::get<ApiError>(strata::serve::parse_tokenize_request(R"({"content": 1})")).param, "content");

  auto d = strata::serve::parse_detokenize_request(R"({"tokens": [1, 2, 3]})");
  ASSERT_TRUE(std::holds_alternative<strata::serve::DetokenizeRequest>(d));
  EXPECT_EQ(std::get<strata::serve::DetokenizeRequest>(d).tokens, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(std::get<ApiError>(strata::serve::parse_detokenize_request(R"({"tokens": [1, "a"]})")).param, "tokens[1]");
  EXPECT_EQ(std::get<ApiError>(strata::serve::parse_detokenize_request(R"({"tokens": [18446744073709551615]})")).param,
            "tokens");
}

}  // namespace
