// Families whose calls carry their arguments as a JSON object: hermes, Llama 3 JSON, Mistral, DeepSeek V3.1,
// Kimi-K2 and Cohere.
#include "strata/tool_calls.hpp"
#include "tool_calls_impl.hpp"

namespace strata::chat::tool_calls {
namespace {

using json = nlohmann::ordered_json;

// A {"name": ..., "arguments"|"parameters": ...} object as a call.
std::optional<Call> call_of_object(const json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  Call c;
  c.name = j["name"].get<std::string>();
  if (j.contains("arguments")) {
    c.arguments = j["arguments"];
  } else if (j.contains("parameters")) {
    c.arguments = j["parameters"];
  } else {
    c.arguments = json::object();
  }
  if (j.contains("id") && j["id"].is_string()) c.id = j["id"].get<std::string>();
  return c;
}

// Every `open ... close` block: its inside; the text outside the blocks goes to `rest`.
std::optional<std::vector<std::string_view>> blocks(std::string_view text, std::string_view open, std::string_view close,
                                                    std::string* rest) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    const size_t a = text.find(open, pos);
    if (a == std::string_view::npos) {
      *rest += text.substr(pos);
      return out;
    }
    *rest += text.substr(pos, a - pos);
    const size_t b = text.find(close, a + open.size());
    if (b == std::string_view::npos) {
      // The reply may end at the model's stop token before the closing tag.
      out.push_back(text.substr(a + open.size()));
      return out;
    }
    out.push_back(text.substr(a + open.size(), b - a - open.size()));
    pos = b + close.size();
  }
}

std::optional<Split> hermes(std::string_view text) {
  Split s;
  const auto inner = blocks(text, "<tool_call>", "</tool_call>", &s.content);
  for (std::string_view b : *inner) {
    const auto j = parse_json(trim(b));
    if (!j) return std::nullopt;
    auto c = call_of_object(*j);
    if (!c) return std::nullopt;
    s.calls.push_back(std::move(*c));
  }
  s.content = std::string(trim(s.content));
  return s;
}

// Llama 3.1: the whole reply is one JSON call (or several separated by ';'), after an optional <|python_tag|>.
std::optional<Split> llama3(std::string_view text) {
  Split s;
  std::string_view t = trim(text);
  const size_t tag = t.find("<|python_tag|>");
  std::string prefix;
  if (tag != std::string_view::npos) {
    prefix = std::string(trim(t.substr(0, tag)));
    t = trim(t.substr(tag + 14));
  }
  if (t.empty() || t[0] != '{') return plain_text(std::string(trim(text)));
  while (!t.empty()) {
    const size_t n = json_extent(t);
    if (n == 0) return std::nullopt;
    const auto j = parse_json(t.substr(0, n));
    if (!j) return std::nullopt;
    auto c = call_of_object(*j);
    if (!c) return plain_text(std::string(trim(text)));  // JSON, but not a call: plain content
    s.calls.push_back(std::move(*c));
    t = trim(t.substr(n));
    if (!t.empty() && t[0] == ';') t = trim(t.substr(1));
  }
  s.content = prefix;
  return s;
}

// [TOOL_CALLS][{...}, ...] (Nemo) or [TOOL_CALLS]name[ARGS]{...} per call (Small 3.2).
std::optional<Split> mistral(std::string_view text) {
  Split s;
  const size_t first = text.find("[TOOL_CALLS]");
  if (first == std::string_view::npos) return plain_text(std::string(trim(text)));
  s.content = std::string(trim(text.substr(0, first)));
  std::string_view t = text.substr(first);
  while (!t.empty()) {
    if (t.rfind("[TOOL_CALLS]", 0) != 0) return std::nullopt;
    t = trim(t.substr(12));
    if (!t.empty() && t[0] == '[') {
      const size_t n = json_extent(t);
      const auto j = n ? parse_json(t.substr(0, n)) : std::nullopt;
      if (!j || !j->is_array()) return std::nullopt;
      for (const json& e : *j) {
        auto c = call_of_object(e);
        if (!c) return std::nullopt;
        s.calls.push_back(std::move(*c));
      }
      t = trim(t.substr(n));
      continue;
    }
    const size_t args = t.find("[ARGS]");
    if (args == std::string_view::npos) return std::nullopt;
    Call c;
    c.name = std::string(trim(t.substr(0, args)));
    std::string_view rest = trim(t.substr(args + 6));
    const size_t n = json_extent(rest);
    const auto j = n ? parse_json(rest.substr(0, n)) : std::nullopt;
    if (!j) return std::nullopt;
    c.arguments = *j;
    s.calls.push_back(std::move(c));
    t = trim(rest.substr(n));
  }
  return s;
}

// Calls in sections: text outside [section_open, section_close) is the content; inside, each [call_open,
// call_close) block is HEAD `separator` JSON-ARGUMENTS, and name_call(head, call) fills the call's name (and id).
// Empty when a block has no separator or its arguments are not JSON.
template <class NameCall>
std::optional<Split> sectioned_calls(std::string_view text, std::string_view section_open, std::string_view section_close,
                                     std::string_view call_open, std::string_view call_close, std::string_view separator,
                                     NameCall&& name_call) {
  Split s;
  std::string outside;
  const auto section = blocks(text, section_open, section_close, &outside);
  for (std::string_view sec : *section) {
    std::string between;
    const auto calls = blocks(sec, call_open, call_close, &between);
    for (std::string_view b : *calls) {
      const size_t sep = b.find(separator);
      if (sep == std::string_view::npos) return std::nullopt;
      Call c;
      name_call(trim(b.substr(0, sep)), c);
      const auto j = parse_json(trim(b.substr(sep + separator.size())));
      if (!j) return std::nullopt;
      c.arguments = *j;
      s.calls.push_back(std::move(c));
    }
  }
  s.content = std::string(trim(outside));
  return s;
}

std::optional<Split> deepseek_v3_1(std::string_view text) {
  return sectioned_calls(text, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                         "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
                         [](std::string_view head, Call& c) { c.name = std::string(head); });
}

std::optional<Split> kimi_k2(std::string_view text) {
  return sectioned_calls(text, "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                         "<|tool_call_end|>", "<|tool_call_argument_begin|>", [](std::string_view head, Call& c) {
                           c.id = std::string(head);  // functions.NAME:INDEX
                           std::string_view name = head;
                           if (name.rfind("functions.", 0) == 0) name.remove_prefix(10);
                           if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
                             name = name.substr(0, colon);
                           }
                           c.name = std::string(name);
                         });
}

std::optional<Split> cohere(std::string_view text) {
  Split s;
  std::string outside;
  const auto actions = blocks(text, "<|START_ACTION|>", "<|END_ACTION|>", &outside);
  for (std::string_view a : *actions) {
    const auto j = parse_json(trim(a));
    if (!j || !j->is_array()) return std::nullopt;
    for (const json& e : *j) {
      if (!e.is_object() || !e.contains("tool_name")) return std::nullopt;
      Call c;
      c.name = e["tool_name"].get<std::string>();
      c.arguments = e.contains("parameters") ? e["parameters"] : json::object();
      s.calls.push_back(std::move(c));
    }
  }
  std::string_view rest = outside;
  const size_t think = rest.find("<|START_THINKING|>");
  if (think != std::string_view::npos) {
    const size_t end = rest.find("<|END_THINKING|>", think);
    s.reasoning = std::string(trim(rest.substr(think + 18, end == std::string_view::npos ? std::string_view::npos : end - think - 18)));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 16);
  }
  // The reply proper sits between <|START_RESPONSE|> and <|END_RESPONSE|> when the model marks it.
  const size_t r = rest.find("<|START_RESPONSE|>");
  if (r != std::string_view::npos) {
    rest = rest.substr(r + 18);
    rest = rest.substr(0, rest.find("<|END_RESPONSE|>"));
  }
  s.content = std::string(trim(rest));
  return s;
}

}  // namespace

std::optional<Split> parse_json_families(int format, std::string_view text) {
  switch (static_cast<ToolCallFormat>(format)) {
    case ToolCallFormat::hermes: return hermes(text);
    case ToolCallFormat::llama3_json: return llama3(text);
    case ToolCallFormat::mistral: return mistral(text);
    case ToolCallFormat::deepseek_v3_1: return deepseek_v3_1(text);
    case ToolCallFormat::kimi_k2: return kimi_k2(text);
    case ToolCallFormat::cohere: return cohere(text);
    default: return plain_text(std::string(text));
  }
}

}  // namespace strata::chat::tool_calls
