// libFuzzer target for the tool-call parsers (core/src/chat/tool_calls*.cpp): a model's reply is whatever it
// wrote, so every reply must come back as content, reasoning and calls, never as an exception, and what comes back
// must serialize (the server dumps it into its response). The first byte picks the family; the rest is the reply,
// made well-formed UTF-8 the way the server's stream decoder makes it (ill-formed bytes become U+FFFD).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "strata/tool_calls.hpp"
#include "../../core/src/tokenizer/utf8.hpp"

namespace {

constexpr int kFormats = static_cast<int>(strata::chat::ToolCallFormat::cohere) + 1;

std::string well_formed(const uint8_t* data, size_t size) {
  using namespace strata::tokenizer_detail;
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  std::string out;
  for (size_t pos = 0; pos < raw.size();) {
    const Utf8Char c = decode_utf8(raw, pos);
    if (c.status == Utf8Status::Valid) {
      out.append(raw, pos, c.length);
    } else {
      append_utf8(out, kReplacementCharacter);
    }
    pos += c.length;
  }
  return out;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "tool_calls_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto format = static_cast<strata::chat::ToolCallFormat>(data[0] % kFormats);
  const std::string text = well_formed(data + 1, size - 1);
  const strata::chat::ParsedReply reply = strata::chat::parse_reply(format, text);
  if (!reply.tool_calls.is_array()) finding("tool_calls is not an array");
  for (const auto& call : reply.tool_calls) {
    if (!call.contains("id") || !call["id"].is_string() || call["id"].get<std::string>().empty()) {
      finding("a call without an id");
    }
    if (!call["function"]["name"].is_string() || !call["function"]["arguments"].is_string()) {
      finding("a call whose name or arguments is not a string");
    }
  }
  // What the server does with it: nlohmann's dump throws on ill-formed UTF-8, which a cut in the middle of a
  // character would make.
  (void)reply.tool_calls.dump();
  (void)nlohmann::json(reply.content).dump();
  (void)nlohmann::json(reply.reasoning_content).dump();
  return 0;
}
