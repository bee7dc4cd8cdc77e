// libFuzzer target for the chat-template renderer: any text either parses and renders against a fixed
// conversation, or fails with a TemplateError. Anything else (another exception, a crash, a sanitizer report, a
// hang) is a finding.
#include <chrono>
#include <cstdint>
#include <string>

#include "strata/chat_template.hpp"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Héllo 😀 \"quoted\" \\ 日本"},
      {"role": "assistant", "content": "", "reasoning_content": "think",
       "tool_calls": [{"id": "abcDEF123", "type": "function",
                       "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
      {"role": "tool", "tool_call_id": "abcDEF123", "content": "{\"ok\": 1}"}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const strata::chat::ChatTemplate t(source);
    const std::string out = t.render(context(), std::chrono::system_clock::time_point{});
    (void)out;
  } catch (const strata::chat::TemplateError&) {
  }
  return 0;
}
