// gpt-oss's harmony format: a reply is a run of messages, each "[<|start|>assistant]<|channel|>C[ to=R]
// [<|constrain|>json]<|message|>BODY" ended by <|end|>, <|call|> or <|return|>. The analysis channel is the
// reasoning, final the answer, and commentary addressed to functions.NAME a tool call.
#include "tool_calls_impl.hpp"

namespace strata::chat::tool_calls {

std::optional<Split> parse_harmony(std::string_view text, std::string* reasoning) {
  Split s;
  size_t pos = 0;
  bool any_message = false;
  while (pos < text.size()) {
    const size_t msg = text.find("<|message|>", pos);
    if (msg == std::string_view::npos) break;
    std::string_view header = text.substr(pos, msg - pos);
    if (const size_t st = header.rfind("<|start|>"); st != std::string_view::npos) header = header.substr(st + 9);
    size_t end = text.size();
    size_t next = text.size();
    for (std::string_view stop : {"<|end|>", "<|call|>", "<|return|>"}) {
      const size_t e = text.find(stop, msg + 11);
      if (e != std::string_view::npos && e < end) {
        end = e;
        next = e + stop.size();
      }
    }
    const std::string_view body = text.substr(msg + 11, end - msg - 11);
    std::string channel;
    if (const size_t ch = header.find("<|channel|>"); ch != std::string_view::npos) {
      std::string_view c = header.substr(ch + 11);
      const size_t stop = c.find_first_of(" <");
      channel = std::string(c.substr(0, stop));
    }
    std::string recipient;
    if (const size_t to = header.find("to="); to != std::string_view::npos) {
      std::string_view r = header.substr(to + 3);
      recipient = std::string(r.substr(0, r.find_first_of(" <")));
    }
    any_message = true;
    if (recipient.rfind("functions.", 0) == 0) {
      Call c;
      c.name = recipient.substr(10);
      const auto j = parse_json(trim(body));
      c.arguments = j ? *j : nlohmann::ordered_json(std::string(body));
      s.calls.push_back(std::move(c));
    } else if (channel == "analysis") {
      if (!reasoning->empty()) *reasoning += "\n";
      *reasoning += std::string(body);
    } else {
      s.content += std::string(body);
    }
    pos = next;
  }
  if (!any_message) s.content = std::string(text);  // plain text, no harmony framing
  return s;
}

}  // namespace strata::chat::tool_calls
