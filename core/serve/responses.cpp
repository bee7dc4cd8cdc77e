#include "strata/serve/responses.hpp"

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;

json bytes_of(const std::string& s) {
  json out = json::array();
  for (const char c : s) out.push_back(static_cast<unsigned char>(c));
  return out;
}

bool is_chat(Endpoint e) { return e == Endpoint::ChatCompletions; }

}  // namespace

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

ReplyFormat::ReplyFormat(Endpoint endpoint, std::string id, std::string model, int64_t created,
                         const Tokenizer& tokenizer)
    : endpoint_(endpoint), id_(std::move(id)), model_(std::move(model)), created_(created), tokenizer_(&tokenizer) {}

json ReplyFormat::envelope(bool chunk) const {
  const char* object = is_chat(endpoint_) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs"}]}; completions (the legacy shape):
// {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
json ReplyFormat::logprobs_json(std::span<const GeneratedToken> tokens) const {
  if (is_chat(endpoint_)) {
    json content = json::array();
    for (const GeneratedToken& t : tokens) {
      if (t.id == kNoToken) continue;
      const std::string piece = tokenizer_->piece(t.id);
      json top = json::array();
      for (const TokenLogprob& alt : t.top) {
        const std::string alt_piece = tokenizer_->piece(alt.id);
        top.push_back({{"token", alt_piece}, {"logprob", alt.logprob}, {"bytes", bytes_of(alt_piece)}});
      }
      content.push_back({{"token", piece}, {"logprob", t.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json pieces = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  for (const GeneratedToken& t : tokens) {
    if (t.id == kNoToken) continue;
    const std::string piece = tokenizer_->piece(t.id);
    pieces.push_back(piece);
    logprobs.push_back(t.logprob);
    json top = json::object();
    for (const TokenLogprob& alt : t.top) top[tokenizer_->piece(alt.id)] = alt.logprob;
    tops.push_back(top);
    offsets.push_back(offset);
    offset += piece.size();
  }
  return {{"tokens", pieces}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json ReplyFormat::reply(const ReplyMessage& m, std::span<const GeneratedToken> tokens, bool logprobs,
                        std::string_view finish_reason, const Usage& usage) const {
  json out = envelope(false);
  json choice;
  choice["index"] = 0;
  if (is_chat(endpoint_)) {
    json message = {{"role", "assistant"}};
    const bool has_calls = m.tool_calls.is_array() && !m.tool_calls.empty();
    message["content"] = m.content.empty() && has_calls ? json() : json(m.content);
    if (!m.reasoning_content.empty()) message["reasoning_content"] = m.reasoning_content;
    if (has_calls) message["tool_calls"] = m.tool_calls;
    choice["message"] = message;
    choice["logprobs"] = logprobs ? logprobs_json(tokens) : json();
    choice["finish_reason"] = has_calls && finish_reason == "stop" ? "tool_calls" : std::string(finish_reason);
  } else {
    choice["text"] = m.content;
    choice["logprobs"] = logprobs ? logprobs_json(tokens) : json();
    choice["finish_reason"] = std::string(finish_reason);
  }
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(usage);
  return out;
}

json ReplyFormat::role_chunk() const {
  json out = envelope(true);
  out["choices"] = json::array(
      {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  return out;
}

json ReplyFormat::text_chunk(std::string_view text, std::span<const GeneratedToken> tokens, bool logprobs) const {
  json out = envelope(true);
  json choice = {{"index", 0}};
  if (is_chat(endpoint_)) {
    choice["delta"] = {{"content", std::string(text)}};
  } else {
    choice["text"] = std::string(text);
  }
  choice["logprobs"] = logprobs ? logprobs_json(tokens) : json();
  choice["finish_reason"] = nullptr;
  out["choices"] = json::array({choice});
  return out;
}

json ReplyFormat::message_chunk(const ReplyMessage& m) const {
  json delta = json::object();
  if (!m.content.empty()) delta["content"] = m.content;
  if (!m.reasoning_content.empty()) delta["reasoning_content"] = m.reasoning_content;
  if (m.tool_calls.is_array() && !m.tool_calls.empty()) {
    json calls = json::array();
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
      json call = {{"index", i}};
      for (const auto& [key, value] : m.tool_calls[i].items()) call[key] = value;
      calls.push_back(call);
    }
    delta["tool_calls"] = calls;
  }
  json out = envelope(true);
  out["choices"] = json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  return out;
}

json ReplyFormat::finish_chunk(std::string_view finish_reason) const {
  json out = envelope(true);
  json choice = {{"index", 0}};
  if (is_chat(endpoint_)) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = std::string(finish_reason);
  out["choices"] = json::array({choice});
  return out;
}

json ReplyFormat::usage_chunk(const Usage& usage) const {
  json out = envelope(true);
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace strata::serve
