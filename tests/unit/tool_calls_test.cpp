// Tool calls: the format detected from each real template, and each family's model output parsed into OpenAI's
// tool_calls, content and reasoning_content.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "strata/tool_calls.hpp"

namespace {

using strata::chat::ParsedReply;
using strata::chat::ToolCallFormat;
using strata::chat::detect_tool_call_format;
using strata::chat::parse_reply;
using json = nlohmann::json;

std::string read_template(const std::string& name) {
  std::ifstream in(std::string(STRATA_TEST_DATA) + "/templates/" + name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The call's name and its arguments parsed back from their JSON text.
void expect_call(const ParsedReply& r, size_t i, const std::string& name, const char* arguments) {
  ASSERT_LT(i, r.tool_calls.size()) << r.tool_calls.dump();
  const auto& c = r.tool_calls[i];
  EXPECT_EQ(c["type"], "function");
  EXPECT_TRUE(c["id"].is_string() && !c["id"].get<std::string>().empty());
  EXPECT_EQ(c["function"]["name"], name);
  ASSERT_TRUE(c["function"]["arguments"].is_string());
  EXPECT_EQ(json::parse(c["function"]["arguments"].get<std::string>()), json::parse(arguments));
}

TEST(ToolCallFormatDetection, EachRealTemplate) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::hermes},
      {"Qwen3-Coder.jinja", ToolCallFormat::qwen3_coder},
      {"Qwen3.5-4B.jinja", ToolCallFormat::qwen3_coder},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", ToolCallFormat::qwen3_coder},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::llama3_json},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::mistral},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::mistral},
      {"deepseek-ai-DeepSeek-V3.1.jinja", ToolCallFormat::deepseek_v3_1},
      {"deepseek-ai-DeepSeek-V3.2.jinja", ToolCallFormat::deepseek_v3_2},
      {"GLM-4.6.jinja", ToolCallFormat::glm},
      {"GLM-4.7-Flash.jinja", ToolCallFormat::glm},
      {"Kimi-K2-Instruct.jinja", ToolCallFormat::kimi_k2},
      {"MiniMax-M2.jinja", ToolCallFormat::minimax_m2},
      {"openai-gpt-oss-120b.jinja", ToolCallFormat::harmony},
      {"Cohere2MoE.jinja", ToolCallFormat::cohere},
      {"LFM2-8B-A1B.jinja", ToolCallFormat::none},
  };
  for (const auto& [file, format] : cases) {
    const std::string source = read_template(file);
    ASSERT_FALSE(source.empty()) << file;
    EXPECT_EQ(detect_tool_call_format(source), format) << file;
  }
  EXPECT_EQ(detect_tool_call_format("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::none);
}

TEST(ToolCallParsing, HermesWithThinking) {
  const ParsedReply r = parse_reply(ToolCallFormat::hermes,
                                    "<think>\nThe user wants the weather in two cities.\n</think>\n\n"
                                    "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                                    "\"arguments\": {\"city\": \"東京\", \"days\": 2}}\n</tool_call>");
  EXPECT_EQ(r.reasoning_content, "The user wants the weather in two cities.");
  EXPECT_EQ(r.content, "Let me check both.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(r, 1, "get_weather", R"({"city": "東京", "days": 2})");
  EXPECT_NE(r.tool_calls[0]["id"], r.tool_calls[1]["id"]);
}

TEST(ToolCallParsing, PlainAnswerHasNoCalls) {
  const ParsedReply r = parse_reply(ToolCallFormat::hermes, "<think>\nsimple\n</think>\n\nParis is the capital.");
  EXPECT_EQ(r.content, "Paris is the capital.");
  EXPECT_EQ(r.reasoning_content, "simple");
  EXPECT_TRUE(r.tool_calls.is_array() && r.tool_calls.empty());
}

TEST(ToolCallParsing, MalformedBlockStaysContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {oops}\n</tool_call>";
  const ParsedReply r = parse_reply(ToolCallFormat::hermes, text);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, text);
}

TEST(ToolCallParsing, Qwen3CoderXml) {
  const ParsedReply r = parse_reply(ToolCallFormat::qwen3_coder,
                                    "I'll search for it.\n<tool_call>\n<function=search>\n<parameter=query>\n"
                                    "strata \"engine\"\n</parameter>\n<parameter=top_k>\n2\n</parameter>\n"
                                    "<parameter=filters>\n{\"lang\": [\"en\"]}\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(r.content, "I'll search for it.");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r, 0, "search", R"({"query": "strata \"engine\"", "top_k": 2, "filters": {"lang": ["en"]}})");
}

TEST(ToolCallParsing, Llama3Json) {
  ParsedReply r = parse_reply(ToolCallFormat::llama3_json,
                              "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}");
  EXPECT_EQ(r.content, "");
  expect_call(r, 0, "get_weather", R"({"city": "Paris", "unit": "celsius"})");
  r = parse_reply(ToolCallFormat::llama3_json, "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"x\"}}");
  expect_call(r, 0, "search", R"({"query": "x"})");
  r = parse_reply(ToolCallFormat::llama3_json, "The answer is 4.");
  EXPECT_EQ(r.content, "The answer is 4.");
  EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ToolCallParsing, MistralNemoAndSmall) {
  ParsedReply r = parse_reply(ToolCallFormat::mistral,
                              "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
                              "\"abcDEF123\"}, {\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(r.tool_calls[0]["id"], "abcDEF123");
  EXPECT_EQ(r.tool_calls[1]["id"].get<std::string>().size(), 9u);  // Mistral's templates want 9 characters
  r = parse_reply(ToolCallFormat::mistral,
                  "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]search[ARGS]{\"query\": \"y\"}");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(r, 1, "search", R"({"query": "y"})");
}

TEST(ToolCallParsing, DeepSeekV31) {
  const ParsedReply r = parse_reply(
      ToolCallFormat::deepseek_v3_1,
      "Need the weather.</think>Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
      "{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"query\": \"q\"}"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  EXPECT_EQ(r.reasoning_content, "Need the weather.");
  EXPECT_EQ(r.content, "Checking.");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  expect_call(r, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(r, 1, "search", R"({"query": "q"})");
}

TEST(ToolCallParsing, DeepSeekV32Dsml) {
  const ParsedReply r = parse_reply(
      ToolCallFormat::deepseek_v3_2,
      "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" "
      "string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3"
      "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>");
  ASSERT_EQ(r.tool_calls.size(), 1u);
  expect_call(r, 0, "get_weather", R"({"city": "Paris", "days": 3})");
}

TEST(ToolCallParsing, GlmArgKeys) {
  const ParsedReply r = parse_reply(ToolCallFormat::glm,
                                    "<think>weather lookup</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                                    "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n"
                                    "</tool_call>");
  EXPECT_EQ(r.reasoning_content, "weather lookup");
  EXPECT_EQ(r.content, "");
  expect_call(r, 0, "get_weather", R"({"city": "Paris", "days": 2})");
  // GLM-4.7 writes it without newlines.
  const ParsedReply flat = parse_reply(ToolCallFormat::glm,
                                       "<tool_call>search<arg_key>query</arg_key><arg_value>a b</arg_value></tool_call>");
  expect_call(flat, 0, "search", R"({"query": "a b"})");
}

TEST(ToolCallParsing, KimiK2KeepsItsIds) {
  const ParsedReply r = parse_reply(ToolCallFormat::kimi_k2,
                                    "Let me look.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                                    "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
                                    "<|tool_calls_section_end|>");
  EXPECT_EQ(r.content, "Let me look.");
  expect_call(r, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(r.tool_calls[0]["id"], "functions.get_weather:0");
}

TEST(ToolCallParsing, MiniMaxM2Invoke) {
  const ParsedReply r = parse_reply(ToolCallFormat::minimax_m2,
                                    "<think>\nI should search.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"search\">\n"
                                    "<parameter name=\"query\">Strata engine</parameter>\n<parameter name=\"top_k\">5"
                                    "</parameter>\n</invoke>\n</minimax:tool_call>");
  EXPECT_EQ(r.reasoning_content, "I should search.");
  expect_call(r, 0, "search", R"({"query": "Strata engine", "top_k": 5})");
}

TEST(ToolCallParsing, HarmonyChannels) {
  const ParsedReply call = parse_reply(
      ToolCallFormat::harmony,
      "<|channel|>analysis<|message|>Need weather for Paris.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
  EXPECT_EQ(call.reasoning_content, "Need weather for Paris.");
  EXPECT_EQ(call.content, "");
  expect_call(call, 0, "get_weather", R"({"city": "Paris"})");
  const ParsedReply answer = parse_reply(
      ToolCallFormat::harmony, "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Paris.<|return|>");
  EXPECT_EQ(answer.reasoning_content, "Easy.");
  EXPECT_EQ(answer.content, "Paris.");
  EXPECT_TRUE(answer.tool_calls.empty());
}

TEST(ToolCallParsing, CohereAction) {
  const ParsedReply r = parse_reply(ToolCallFormat::cohere,
                                    "<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
                                    "\"tool_name\": \"search\", \"parameters\": {\"query\": \"x\"}}\n]<|END_ACTION|>");
  EXPECT_EQ(r.reasoning_content, "plan");
  EXPECT_EQ(r.content, "");
  expect_call(r, 0, "search", R"({"query": "x"})");
}

TEST(ToolCallParsing, IdsAreStableForTheSameReply) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  EXPECT_EQ(parse_reply(ToolCallFormat::hermes, text).tool_calls[0]["id"],
            parse_reply(ToolCallFormat::hermes, text).tool_calls[0]["id"]);
}

}  // namespace
