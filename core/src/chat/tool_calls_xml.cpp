// Families whose calls name each parameter in a tag: Qwen3-Coder (and Qwen3.5, Nemotron-3), GLM-4.6/4.7,
// MiniMax-M2 and DeepSeek V3.2's DSML. Their values are text: JSON where it parses as JSON (numbers, objects,
// true), else the string itself; DSML says which with string="true|false".
#include "strata/tool_calls.hpp"
#include "tool_calls_impl.hpp"

namespace strata::chat::tool_calls {
namespace {

using json = nlohmann::ordered_json;

// The value between a parameter's tags, without the single newline the templates put on each side.
std::string_view param_text(std::string_view v) {
  if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  return v;
}

// name="X" in a tag's attributes.
std::optional<std::string> attribute(std::string_view tag, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  const size_t a = tag.find(key);
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = tag.find('"', a + key.size());
  if (b == std::string_view::npos) return std::nullopt;
  return std::string(tag.substr(a + key.size(), b - a - key.size()));
}

// Cuts `text` at each open..close block (close may be missing at the very end).
template <typename F>
bool each_block(std::string_view text, std::string_view open, std::string_view close, std::string* outside, F&& f) {
  size_t pos = 0;
  for (;;) {
    const size_t a = text.find(open, pos);
    if (a == std::string_view::npos) {
      *outside += text.substr(pos);
      return true;
    }
    *outside += text.substr(pos, a - pos);
    size_t b = text.find(close, a + open.size());
    const bool closed = b != std::string_view::npos;
    if (!closed) b = text.size();
    if (!f(text.substr(a + open.size(), b - a - open.size()))) return false;
    pos = closed ? b + close.size() : text.size();
  }
}

std::optional<Split> qwen3_coder(std::string_view text) {
  Split s;
  const bool ok = each_block(text, "<tool_call>", "</tool_call>", &s.content, [&](std::string_view block) {
    std::string ignored;
    return each_block(block, "<function=", "</function>", &ignored, [&](std::string_view fn) {
      const size_t gt = fn.find('>');
      if (gt == std::string_view::npos) return false;
      Call c;
      c.name = std::string(trim(fn.substr(0, gt)));
      c.arguments = json::object();
      std::string between;
      const bool params_ok = each_block(fn.substr(gt + 1), "<parameter=", "</parameter>", &between, [&](std::string_view p) {
        const size_t pgt = p.find('>');
        if (pgt == std::string_view::npos) return false;
        c.arguments[std::string(trim(p.substr(0, pgt)))] = loose_value(param_text(p.substr(pgt + 1)));
        return true;
      });
      if (!params_ok) return false;
      s.calls.push_back(std::move(c));
      return true;
    });
  });
  if (!ok) return std::nullopt;
  s.content = std::string(trim(s.content));
  return s;
}

std::optional<Split> glm(std::string_view text) {
  Split s;
  const bool ok = each_block(text, "<tool_call>", "</tool_call>", &s.content, [&](std::string_view block) {
    const size_t first_key = block.find("<arg_key>");
    Call c;
    c.name = std::string(trim(block.substr(0, first_key)));
    if (c.name.empty()) return false;
    c.arguments = json::object();
    size_t pos = first_key;
    while (pos != std::string_view::npos) {
      const size_t ke = block.find("</arg_key>", pos);
      const size_t vs = block.find("<arg_value>", pos);
      const size_t ve = block.find("</arg_value>", pos);
      if (ke == std::string_view::npos || vs == std::string_view::npos || ve == std::string_view::npos || vs < ke) return false;
      const std::string key(trim(block.substr(pos + 9, ke - pos - 9)));
      c.arguments[key] = loose_value(block.substr(vs + 11, ve - vs - 11));
      pos = block.find("<arg_key>", ve);
    }
    s.calls.push_back(std::move(c));
    return true;
  });
  if (!ok) return std::nullopt;
  s.content = std::string(trim(s.content));
  return s;
}

// <invoke name="N"><parameter name="P">v</parameter>...</invoke>, with `prefix` before each tag name
// (DeepSeek's "｜DSML｜", none for MiniMax).
std::optional<Split> invoke_blocks(std::string_view text, std::string_view section_open, std::string_view section_close,
                                   const std::string& prefix, bool typed) {
  Split s;
  const std::string invoke_open = "<" + prefix + "invoke", invoke_close = "</" + prefix + "invoke>";
  const std::string param_open = "<" + prefix + "parameter", param_close = "</" + prefix + "parameter>";
  const bool ok = each_block(text, section_open, section_close, &s.content, [&](std::string_view section) {
    std::string ignored;
    return each_block(section, invoke_open, invoke_close, &ignored, [&](std::string_view inv) {
      const size_t gt = inv.find('>');
      if (gt == std::string_view::npos) return false;
      const auto name = attribute(inv.substr(0, gt), "name");
      if (!name) return false;
      Call c;
      c.name = *name;
      c.arguments = json::object();
      std::string between;
      const bool params_ok = each_block(inv.substr(gt + 1), param_open, param_close, &between, [&](std::string_view p) {
        const size_t pgt = p.find('>');
        if (pgt == std::string_view::npos) return false;
        const std::string_view tag = p.substr(0, pgt);
        const auto pname = attribute(tag, "name");
        if (!pname) return false;
        const std::string_view value = p.substr(pgt + 1);
        if (typed && attribute(tag, "string").value_or("false") == "true") {
          c.arguments[*pname] = std::string(value);
        } else {
          c.arguments[*pname] = loose_value(typed ? value : param_text(value));
        }
        return true;
      });
      if (!params_ok) return false;
      s.calls.push_back(std::move(c));
      return true;
    });
  });
  if (!ok) return std::nullopt;
  s.content = std::string(trim(s.content));
  return s;
}

}  // namespace

std::optional<Split> parse_xml_families(int format, std::string_view text) {
  switch (static_cast<ToolCallFormat>(format)) {
    case ToolCallFormat::qwen3_coder: return qwen3_coder(text);
    case ToolCallFormat::glm: return glm(text);
    case ToolCallFormat::minimax_m2:
      return invoke_blocks(text, "<minimax:tool_call>", "</minimax:tool_call>", "", false);
    case ToolCallFormat::deepseek_v3_2:
      return invoke_blocks(text, "<｜DSML｜function_calls>", "</｜DSML｜function_calls>", "｜DSML｜", true);
    default: return plain_text(std::string(text));
  }
}

}  // namespace strata::chat::tool_calls
