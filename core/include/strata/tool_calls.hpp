// Tool calls in a model's reply: which syntax a chat template teaches its model (detected from the template's
// source), and the reply split into OpenAI's message fields.
//
// Families covered, each with the syntax its template in tests/data/templates renders:
//   hermes         Qwen3, Qwen2.5:            <tool_call>{"name": N, "arguments": {...}}</tool_call>
//   qwen3_coder    Qwen3-Coder, Qwen3.5, Nemotron-3 Nano:
//                  <tool_call><function=N><parameter=P>value</parameter></function></tool_call>
//   llama3_json    Llama 3.1/3.2:             [<|python_tag|>]{"name": N, "parameters": {...}}[; {...}]
//   mistral        Mistral Nemo:              [TOOL_CALLS][{"name": N, "arguments": {...}, "id": I}]
//                  Mistral Small 3.2:         [TOOL_CALLS]N[ARGS]{...}  (repeated per call)
//   deepseek_v3_1  DeepSeek V3.1:  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...
//   deepseek_v3_2  DeepSeek V3.2 (DSML):  <｜DSML｜function_calls><｜DSML｜invoke name="N">
//                  <｜DSML｜parameter name="P" string="true|false">value</｜DSML｜parameter>...
//   glm            GLM-4.6, GLM-4.7:          <tool_call>N<arg_key>P</arg_key><arg_value>value</arg_value></tool_call>
//   kimi_k2        Kimi-K2:   <|tool_calls_section_begin|><|tool_call_begin|>functions.N:0
//                             <|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>
//   minimax_m2     MiniMax-M2: <minimax:tool_call><invoke name="N"><parameter name="P">value</parameter></invoke>
//   harmony        gpt-oss:   <|channel|>commentary to=functions.N <|constrain|>json<|message|>{...}<|call|>
//                             (analysis channel -> reasoning_content, final channel -> content)
//   cohere         Command-A (Cohere2): <|START_ACTION|>[{"tool_call_id": I, "tool_name": N, "parameters": {...}}]<|END_ACTION|>
// Not covered: LFM2's pythonic calls ([f(a=1)]); their text stays in `content`.
//
// Text inside <think>...</think> (or before a lone </think>: templates that open the block in the prompt) becomes
// reasoning_content for every format but harmony, which has its own channels.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata::chat {

enum class ToolCallFormat {
  none,
  hermes,
  qwen3_coder,
  llama3_json,
  mistral,
  deepseek_v3_1,
  deepseek_v3_2,
  glm,
  kimi_k2,
  minimax_m2,
  harmony,
  cohere,
};

// The format a chat template's model writes tool calls in; none when the template shows no known syntax.
ToolCallFormat detect_tool_call_format(std::string_view template_source);
std::string_view tool_call_format_name(ToolCallFormat format);

struct ParsedReply {
  std::string content;            // the reply's text, tool-call blocks and reasoning removed
  std::string reasoning_content;  // empty when the model wrote none
  // OpenAI's tool_calls: [{"id", "type": "function", "function": {"name", "arguments": JSON text}}]; empty array
  // when there are none. A block that does not parse is left in `content` and yields no call.
  nlohmann::ordered_json tool_calls = nlohmann::ordered_json::array();
};

ParsedReply parse_reply(ToolCallFormat format, std::string_view text);

}  // namespace strata::chat
