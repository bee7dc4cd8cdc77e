// parse_reply: reasoning split off, the family's parser run, and the calls put in OpenAI's shape with ids.
#include "strata/tool_calls.hpp"

#include <cstdint>

#include "tool_calls_impl.hpp"

namespace strata::chat {
namespace tool_calls {

std::string_view trim(std::string_view s) {
  const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return s;
}

size_t json_extent(std::string_view s) {
  if (s.empty() || (s[0] != '{' && s[0] != '[')) return 0;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return 0;
}

std::optional<nlohmann::ordered_json> parse_json(std::string_view s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(s.begin(), s.end(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

nlohmann::ordered_json loose_value(std::string_view s) {
  if (auto j = parse_json(trim(s))) return *j;
  return std::string(s);
}

}  // namespace tool_calls

namespace {

// Nine letters and digits (Mistral's templates insist on that form), from a hash of the reply and the call's
// position: the same reply gets the same ids.
std::string make_id(std::string_view text, size_t index) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  h = (h ^ index) * 1099511628211ull;
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id;
  for (int i = 0; i < 9; ++i) {
    id += kAlphabet[h % 62];
    h /= 62;
    if (h == 0) h = 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i);
  }
  return id;
}

// <think>...</think> anywhere, or a lone </think> ending reasoning that the prompt opened.
void split_reasoning(std::string& text, std::string& reasoning) {
  const size_t close = text.find("</think>");
  if (close == std::string::npos) return;
  size_t open = text.rfind("<think>", close);
  const size_t start = open == std::string::npos ? 0 : open + 7;
  if (open == std::string::npos) open = 0;
  reasoning = std::string(tool_calls::trim(std::string_view(text).substr(start, close - start)));
  text = text.substr(0, open) + text.substr(close + 8);
  const size_t first = text.find_first_not_of("\n");
  text = first == std::string::npos ? std::string() : text.substr(first);
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
  const auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (has("<｜tool▁calls▁begin｜>")) return ToolCallFormat::deepseek_v3_1;
  if (has("｜DSML｜")) return ToolCallFormat::deepseek_v3_2;
  if (has("<|tool_calls_section_begin|>")) return ToolCallFormat::kimi_k2;
  if (has("<minimax:tool_call>")) return ToolCallFormat::minimax_m2;
  if (has("<|channel|>") && (has("<|call|>") || has("to=functions"))) return ToolCallFormat::harmony;
  if (has("<arg_key>")) return ToolCallFormat::glm;
  if (has("<function=") && has("<parameter=")) return ToolCallFormat::qwen3_coder;
  if (has("<tool_call>")) return ToolCallFormat::hermes;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::mistral;
  if (has("<|START_ACTION|>")) return ToolCallFormat::cohere;
  if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("\"parameters\""))) return ToolCallFormat::llama3_json;
  return ToolCallFormat::none;
}

std::string_view tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::none: return "none";
    case ToolCallFormat::hermes: return "hermes";
    case ToolCallFormat::qwen3_coder: return "qwen3_coder";
    case ToolCallFormat::llama3_json: return "llama3_json";
    case ToolCallFormat::mistral: return "mistral";
    case ToolCallFormat::deepseek_v3_1: return "deepseek_v3_1";
    case ToolCallFormat::deepseek_v3_2: return "deepseek_v3_2";
    case ToolCallFormat::glm: return "glm";
    case ToolCallFormat::kimi_k2: return "kimi_k2";
    case ToolCallFormat::minimax_m2: return "minimax_m2";
    case ToolCallFormat::harmony: return "harmony";
    case ToolCallFormat::cohere: return "cohere";
  }
  return "none";
}

ParsedReply parse_reply(ToolCallFormat format, std::string_view text) {
  ParsedReply reply;
  std::string body(text);
  std::optional<tool_calls::Split> split;
  if (format == ToolCallFormat::harmony) {
    split = tool_calls::parse_harmony(body, &reply.reasoning_content);
  } else {
    split_reasoning(body, reply.reasoning_content);
    switch (format) {
      case ToolCallFormat::none: split = tool_calls::plain_text(body); break;
      case ToolCallFormat::qwen3_coder:
      case ToolCallFormat::deepseek_v3_2:
      case ToolCallFormat::glm:
      case ToolCallFormat::minimax_m2: split = tool_calls::parse_xml_families(static_cast<int>(format), body); break;
      default: split = tool_calls::parse_json_families(static_cast<int>(format), body); break;
    }
  }
  if (!split) {
    reply.content = body;
    return reply;
  }
  reply.content = std::move(split->content);
  if (reply.reasoning_content.empty()) reply.reasoning_content = std::move(split->reasoning);
  for (size_t i = 0; i < split->calls.size(); ++i) {
    tool_calls::Call& c = split->calls[i];
    nlohmann::ordered_json call;
    call["id"] = c.id.empty() ? make_id(text, i) : c.id;
    call["type"] = "function";
    call["function"]["name"] = c.name;
    call["function"]["arguments"] = c.arguments.is_string() ? c.arguments.get<std::string>() : c.arguments.dump();
    reply.tool_calls.push_back(std::move(call));
  }
  return reply;
}

}  // namespace strata::chat
