// Server-sent event framing and the OpenAI chunk objects a stream is made of.
#include <gtest/gtest.h>

#include "strata/serve/responses.hpp"
#include "strata/serve/sse.hpp"
#include "strata/tokenizer.hpp"

namespace {

using strata::serve::sse_event;

TEST(ServeSse, OneLineIsOneDataField) {
  EXPECT_EQ(sse_event(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event(""), "data: \n\n");
  EXPECT_EQ(strata::serve::kSseDone, "data: [DONE]\n\n");
}

TEST(ServeSse, EachLineGetsItsOwnDataField) {
  EXPECT_EQ(sse_event("a\nb"), "data: a\ndata: b\n\n");
  EXPECT_EQ(sse_event("a\n"), "data: a\ndata: \n\n");
}

strata::Tokenizer tiny_vocab() {
  strata::VocabSpec spec;
  spec.model = "llama";
  spec.tokens = {"<unk>", "<s>", "</s>", "\xe2\x96\x81hi", "!"};
  spec.types = {2, 3, 3, 1, 1};
  spec.bos_id = 1;
  spec.eos_id = 2;
  spec.unk_id = 0;
  return strata::Tokenizer(spec);
}

TEST(ServeSse, ChatChunksCarryRoleTextFinishAndUsage) {
  const strata::Tokenizer tok = tiny_vocab();
  const strata::serve::ReplyFormat f(strata::serve::Endpoint::ChatCompletions, "chatcmpl-1", "m", 7, tok);
  const auto role = f.role_chunk();
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["id"], "chatcmpl-1");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");

  strata::GeneratedToken t;
  t.id = 3;
  t.text = " hi";
  t.logprob = -0.5f;
  t.top = {{3, -0.5f}, {4, -1.5f}};
  const auto text = f.text_chunk(" hi", {&t, 1}, true);
  EXPECT_EQ(text["choices"][0]["delta"]["content"], " hi");
  EXPECT_TRUE(text["choices"][0]["finish_reason"].is_null());
  const auto& lp = text["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(lp["token"], " hi");
  EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(lp["bytes"].size(), 3u);
  EXPECT_EQ(lp["top_logprobs"][1]["token"], "!");

  EXPECT_EQ(f.finish_chunk("stop")["choices"][0]["finish_reason"], "stop");
  const auto usage = f.usage_chunk({10, 4, 6});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 14);
  EXPECT_EQ(usage["usage"]["prompt_tokens_details"]["cached_tokens"], 6);
}

TEST(ServeSse, WholeRepliesNameToolCallsAsTheFinishReason) {
  const strata::Tokenizer tok = tiny_vocab();
  const strata::serve::ReplyFormat chat(strata::serve::Endpoint::ChatCompletions, "c", "m", 7, tok);
  strata::serve::ReplyMessage m;
  m.tool_calls = nlohmann::ordered_json::parse(
      R"([{"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}])");
  const auto reply = chat.reply(m, {}, false, "stop", {3, 2, 0});
  EXPECT_EQ(reply["object"], "chat.completion");
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(reply["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
  const auto chunk = chat.message_chunk(m);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 0);

  const strata::serve::ReplyFormat text(strata::serve::Endpoint::Completions, "cmpl-1", "m", 7, tok);
  strata::serve::ReplyMessage plain;
  plain.content = "story";
  const auto whole = text.reply(plain, {}, false, "length", {3, 2, 0});
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["choices"][0]["text"], "story");
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
}

}  // namespace
