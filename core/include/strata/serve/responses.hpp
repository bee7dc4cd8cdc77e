// The OpenAI response objects of one completion: the whole reply (chat.completion, text_completion) and the
// chunks of a stream (chat.completion.chunk, text_completion chunks), with usage and log-probabilities.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "strata/generate.hpp"
#include "strata/serve/request.hpp"
#include "strata/tokenizer.hpp"

namespace strata::serve {

struct Usage {
  size_t prompt_tokens = 0;
  size_t completion_tokens = 0;
  size_t cached_tokens = 0;  // prompt tokens the slot already held
};

// A chat reply split by the model's tool-call format: its text, its reasoning and its tool calls.
struct ReplyMessage {
  std::string content;
  std::string reasoning_content;                    // empty: left out
  nlohmann::ordered_json tool_calls = nullptr;      // null or an array in OpenAI's format
};

class ReplyFormat {
 public:
  // `id`: "chatcmpl-..." or "cmpl-...", the same for every chunk of a stream.
  ReplyFormat(Endpoint endpoint, std::string id, std::string model, int64_t created, const Tokenizer& tokenizer);

  // The whole reply. `tokens`: the generated steps (their log-probabilities when `logprobs`).
  nlohmann::ordered_json reply(const ReplyMessage& message, std::span<const GeneratedToken> tokens, bool logprobs,
                               std::string_view finish_reason, const Usage& usage) const;
  // Chat streams: the first chunk (the assistant role).
  nlohmann::ordered_json role_chunk() const;
  // A chunk of text, with the log-probabilities of `tokens` when `logprobs`.
  nlohmann::ordered_json text_chunk(std::string_view text, std::span<const GeneratedToken> tokens, bool logprobs) const;
  // Chat streams with tools: the parsed reply at the end (content, reasoning, tool_calls deltas).
  nlohmann::ordered_json message_chunk(const ReplyMessage& message) const;
  // The chunk with the finish reason.
  nlohmann::ordered_json finish_chunk(std::string_view finish_reason) const;
  // stream_options.include_usage: the last chunk, no choices.
  nlohmann::ordered_json usage_chunk(const Usage& usage) const;

 private:
  nlohmann::ordered_json envelope(bool chunk) const;
  nlohmann::ordered_json logprobs_json(std::span<const GeneratedToken> tokens) const;
  Endpoint endpoint_;
  std::string id_, model_;
  int64_t created_;
  const Tokenizer* tokenizer_;
};

nlohmann::ordered_json usage_json(const Usage& usage);

}  // namespace strata::serve
