// Every check of a request body, each with the message and the field it names. Internally a failed check throws
// Rejected, caught at each parse function's edge, so the functions themselves never throw.
#include "strata/serve/request.hpp"

#include <cmath>
#include <limits>

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;

struct Rejected {
  ApiError error;
};

[[noreturn]] void reject(std::string message, std::string param, std::string code = "invalid_value") {
  throw Rejected{invalid_request(std::move(message), std::move(param), std::move(code))};
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "binary data";
  }
}

[[noreturn]] void wrong_type(const std::string& param, const char* wanted, const json& got) {
  reject("'" + param + "' must be " + wanted + ", not " + type_name(got), param, "invalid_type");
}

// Deeper nesting than any request needs is refused before parsing: copies and dumps of a value recurse.
bool nested_deeper_than(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

json parse_object(std::string_view body) {
  constexpr int kMaxDepth = 64;
  if (nested_deeper_than(body, kMaxDepth)) {
    throw Rejected{invalid_request("the body nests deeper than " + std::to_string(kMaxDepth) + " levels", {},
                                   "invalid_json")};
  }
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded()) {
    throw Rejected{invalid_request("the body is not valid JSON", {}, "invalid_json")};
  }
  if (!root.is_object()) {
    throw Rejected{invalid_request(std::string("the body must be a JSON object, not ") + type_name(root), {},
                                   "invalid_json")};
  }
  return root;
}

// A field's value, or null when it is absent (null counts as absent, as OpenAI's API treats it).
const json& field(const json& root, const char* name) {
  static const json null;
  const auto it = root.find(name);
  return it == root.end() ? null : *it;
}

std::optional<bool> get_bool(const json& root, const char* name) {
  const json& v = field(root, name);
  if (v.is_null()) return std::nullopt;
  if (!v.is_boolean()) wrong_type(name, "a boolean", v);
  return v.get<bool>();
}

std::optional<double> get_number(const json& root, const char* name, double min, double max) {
  const json& v = field(root, name);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) wrong_type(name, "a number", v);
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    reject("'" + std::string(name) + "' must be between " + json(min).dump() + " and " + json(max).dump() +
               ", not " + v.dump(),
           name);
  }
  return x;
}

std::optional<int64_t> get_integer(const json& root, const char* name, int64_t min, int64_t max) {
  const json& v = field(root, name);
  if (v.is_null()) return std::nullopt;
  int64_t x = 0;
  if (v.is_number_float()) {
    // 2.0 is an integer too (JavaScript clients cannot tell them apart).
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) wrong_type(name, "an integer", v);
    x = static_cast<int64_t>(d);
  } else if (!v.is_number_integer()) {
    wrong_type(name, "an integer", v);
  } else if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    reject("'" + std::string(name) + "' is too large", name);
  } else {
    x = v.get<int64_t>();
  }
  if (x < min || x > max) {
    reject("'" + std::string(name) + "' must be between " + std::to_string(min) + " and " + std::to_string(max) +
               ", not " + std::to_string(x),
           name);
  }
  return x;
}

// A message's content as one string: a string, or an array of {"type": "text", "text": ...} parts joined.
json normalized_content(const json& content, const std::string& param) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(part_param, "an object", part);
    const json& type = field(part, "type");
    if (!type.is_string()) wrong_type(part_param + ".type", "a string", type);
    if (type.get<std::string>() != "text") {
      reject("content parts of type '" + type.get<std::string>() + "' are not supported (only 'text')",
             part_param + ".type", "unsupported_content");
    }
    const json& t = field(part, "text");
    if (!t.is_string()) wrong_type(part_param + ".text", "a string", t);
    text += t.get<std::string>();
  }
  return text;
}

// An assistant message's tool calls, with each function's arguments as an object when sent as a JSON string.
json normalized_tool_calls(const json& calls, const std::string& param) {
  if (!calls.is_array()) wrong_type(param, "an array", calls);
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string p = param + "[" + std::to_string(i) + "]";
    json call = calls[i];
    if (!call.is_object()) wrong_type(p, "an object", call);
    const json& fn = field(call, "function");
    if (!fn.is_object()) wrong_type(p + ".function", "an object", fn);
    if (!field(fn, "name").is_string()) wrong_type(p + ".function.name", "a string", field(fn, "name"));
    const json& args = field(fn, "arguments");
    if (args.is_string()) {
      json parsed = json::parse(args.get<std::string>(), nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) call["function"]["arguments"] = std::move(parsed);
    } else if (!args.is_null() && !args.is_object()) {
      wrong_type(p + ".function.arguments", "a string or an object", args);
    }
    out.push_back(std::move(call));
  }
  return out;
}

json parse_messages(const json& root) {
  const json& messages = field(root, "messages");
  if (messages.is_null()) reject("'messages' is required", "messages", "missing_required_parameter");
  if (!messages.is_array()) wrong_type("messages", "an array", messages);
  if (messages.empty()) reject("'messages' must hold at least one message", "messages", "empty_array");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string p = "messages[" + std::to_string(i) + "]";
    json m = messages[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    const json& role = field(m, "role");
    if (!role.is_string()) wrong_type(p + ".role", "a string", role);
    const std::string r = role.get<std::string>();
    if (r != "system" && r != "developer" && r != "user" && r != "assistant" && r != "tool") {
      reject("'" + p + ".role' must be one of system, developer, user, assistant, tool; not '" + r + "'",
             p + ".role");
    }
    m["content"] = normalized_content(field(m, "content"), p + ".content");
    if (m["content"].is_null() && r != "assistant") {
      reject("'" + p + ".content' is required for a " + r + " message", p + ".content",
             "missing_required_parameter");
    }
    if (m.contains("tool_calls")) {
      if (m["tool_calls"].is_null()) {
        m.erase("tool_calls");
      } else if (r != "assistant") {
        reject("only assistant messages carry tool_calls", p + ".tool_calls");
      } else {
        m["tool_calls"] = normalized_tool_calls(m["tool_calls"], p + ".tool_calls");
      }
    }
    for (const char* text_field : {"name", "tool_call_id", "reasoning_content"}) {
      const json& v = field(m, text_field);
      if (!v.is_null() && !v.is_string()) wrong_type(p + "." + text_field, "a string", v);
    }
    out.push_back(std::move(m));
  }
  return out;
}

json parse_tools(const json& root) {
  const json& tools = field(root, "tools");
  if (tools.is_null()) return nullptr;
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string p = "tools[" + std::to_string(i) + "]";
    if (!tools[i].is_object()) wrong_type(p, "an object", tools[i]);
    const json& fn = field(tools[i], "function");
    if (!fn.is_object()) wrong_type(p + ".function", "an object", fn);
    if (!field(fn, "name").is_string()) wrong_type(p + ".function.name", "a string", field(fn, "name"));
  }
  return tools.empty() ? json() : tools;
}

std::vector<std::string> parse_stop(const json& root) {
  const json& stop = field(root, "stop");
  if (stop.is_null()) return {};
  if (stop.is_string()) return {stop.get<std::string>()};
  if (!stop.is_array()) wrong_type("stop", "a string or an array of strings", stop);
  constexpr size_t kMaxStops = 16;
  if (stop.size() > kMaxStops) reject("'stop' takes at most " + std::to_string(kMaxStops) + " strings", "stop");
  std::vector<std::string> out;
  for (size_t i = 0; i < stop.size(); ++i) {
    if (!stop[i].is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", stop[i]);
    out.push_back(stop[i].get<std::string>());
  }
  return out;
}

std::string parse_prompt(const json& root) {
  const json& prompt = field(root, "prompt");
  if (prompt.is_null()) reject("'prompt' is required", "prompt", "missing_required_parameter");
  if (prompt.is_string()) return prompt.get<std::string>();
  // One prompt: a list of prompts must hold exactly one (n = 1 choice per request).
  if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) return prompt[0].get<std::string>();
  if (prompt.is_array() && prompt.size() != 1) reject("'prompt' must be one string (one prompt per request)", "prompt");
  wrong_type("prompt", "a string", prompt);
}

void check_model(const json& root, std::string_view served_model) {
  const json& model = field(root, "model");
  if (model.is_null()) return;
  if (!model.is_string()) wrong_type("model", "a string", model);
  const std::string name = model.get<std::string>();
  if (name.empty() || name == served_model || name == std::string(served_model) + ".gguf") return;
  throw Rejected{{404, "the model '" + name + "' does not exist; this server serves '" + std::string(served_model) + "'",
                  "invalid_request_error", "model", "model_not_found"}};
}

CompletionRequest parse_completion(Endpoint endpoint, std::string_view body, std::string_view served_model) {
  const json root = parse_object(body);
  CompletionRequest r;
  r.endpoint = endpoint;
  check_model(root, served_model);
  if (endpoint == Endpoint::ChatCompletions) {
    r.messages = parse_messages(root);
    r.tools = parse_tools(root);
  } else {
    r.prompt = parse_prompt(root);
  }
  constexpr int64_t kMaxTokens = std::numeric_limits<int>::max();
  const std::optional<int64_t> max_tokens = get_integer(root, "max_tokens", 1, kMaxTokens);
  const std::optional<int64_t> max_completion = get_integer(root, "max_completion_tokens", 1, kMaxTokens);
  if (max_completion) {
    r.max_tokens = static_cast<int>(*max_completion);
  } else if (max_tokens) {
    r.max_tokens = static_cast<int>(*max_tokens);
  }
  r.temperature = get_number(root, "temperature", 0.0, 2.0);
  r.top_p = get_number(root, "top_p", 0.0, 1.0);
  r.min_p = get_number(root, "min_p", 0.0, 1.0);
  r.repeat_penalty = get_number(root, "repeat_penalty", 0.01, 100.0);
  if (const auto k = get_integer(root, "top_k", 0, std::numeric_limits<int>::max())) r.top_k = static_cast<int>(*k);
  if (const auto seed = get_integer(root, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    r.seed = static_cast<uint64_t>(*seed);
  }
  r.stop = parse_stop(root);
  if (const auto n = get_integer(root, "n", 1, std::numeric_limits<int>::max()); n && *n != 1) {
    reject("'n' must be 1: one choice per request", "n", "unsupported_value");
  }
  r.stream = get_bool(root, "stream").value_or(false);
  const json& stream_options = field(root, "stream_options");
  if (!stream_options.is_null()) {
    if (!stream_options.is_object()) wrong_type("stream_options", "an object", stream_options);
    if (!r.stream) reject("'stream_options' is only allowed when 'stream' is true", "stream_options");
    if (!field(stream_options, "include_usage").is_null() && !field(stream_options, "include_usage").is_boolean()) {
      wrong_type("stream_options.include_usage", "a boolean", field(stream_options, "include_usage"));
    }
    r.include_usage = field(stream_options, "include_usage").is_boolean() &&
                      field(stream_options, "include_usage").get<bool>();
  }
  constexpr int64_t kMaxTopLogprobs = 20;
  if (endpoint == Endpoint::ChatCompletions) {
    r.logprobs = get_bool(root, "logprobs").value_or(false);
    if (const auto top = get_integer(root, "top_logprobs", 0, kMaxTopLogprobs)) {
      if (!r.logprobs) reject("'top_logprobs' needs 'logprobs' set to true", "top_logprobs");
      r.top_logprobs = static_cast<int>(*top);
    }
  } else if (const auto top = get_integer(root, "logprobs", 0, 5)) {
    // The legacy completions API: logprobs is the number of alternatives per token.
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*top);
  }
  r.pcie_frac = get_number(root, "pcie_frac", 0.0, 1.0);
  return r;
}

template <typename T, typename F>
Parsed<T> guarded(F&& parse) {
  try {
    return parse();
  } catch (const Rejected& r) {
    return r.error;
  } catch (const json::exception& e) {
    // A check above missed a type: still the client's input.
    return invalid_request(std::string("malformed request: ") + e.what());
  }
}

}  // namespace

Parsed<CompletionRequest> parse_completion_request(Endpoint endpoint, std::string_view body,
                                                   std::string_view served_model) {
  return guarded<CompletionRequest>([&] { return parse_completion(endpoint, body, served_model); });
}

Parsed<TemplateRequest> parse_template_request(std::string_view body) {
  return guarded<TemplateRequest>([&] {
    const json root = parse_object(body);
    TemplateRequest r;
    r.messages = parse_messages(root);
    r.tools = parse_tools(root);
    r.add_generation_prompt = get_bool(root, "add_generation_prompt").value_or(true);
    return r;
  });
}

Parsed<TokenizeRequest> parse_tokenize_request(std::string_view body) {
  return guarded<TokenizeRequest>([&] {
    const json root = parse_object(body);
    TokenizeRequest r;
    const json& content = field(root, "content");
    if (content.is_null()) reject("'content' is required", "content", "missing_required_parameter");
    if (!content.is_string()) wrong_type("content", "a string", content);
    r.content = content.get<std::string>();
    r.add_special = get_bool(root, "add_special").value_or(false);
    r.parse_special = get_bool(root, "parse_special").value_or(true);
    r.with_pieces = get_bool(root, "with_pieces").value_or(false);
    return r;
  });
}

Parsed<DetokenizeRequest> parse_detokenize_request(std::string_view body) {
  return guarded<DetokenizeRequest>([&] {
    const json root = parse_object(body);
    DetokenizeRequest r;
    const json& tokens = field(root, "tokens");
    if (tokens.is_null()) reject("'tokens' is required", "tokens", "missing_required_parameter");
    if (!tokens.is_array()) wrong_type("tokens", "an array of integers", tokens);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (!tokens[i].is_number_integer()) wrong_type("tokens[" + std::to_string(i) + "]", "an integer", tokens[i]);
      if (tokens[i].is_number_unsigned() &&
          tokens[i].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        reject("'tokens[" + std::to_string(i) + "]' is not a token id", "tokens");
      }
      r.tokens.push_back(tokens[i].get<int64_t>());
    }
    return r;
  });
}

}  // namespace strata::serve
