// Every check of a request body, each with the message and the field it names. Internally a failed check throws
// Rejected, caught at each parse function's edge, so the functions themselves never throw.
#include "strata/serve/request.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>

#include "strata/error.hpp"
#include "strata/prompt_images.hpp"
#include "strata/vision.hpp"

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

// One image_url part's bytes: {"url": "data:..."} (OpenAI's form; "detail" is taken and has no effect) or the
// URL as a string. Only data URLs: the server fetches nothing.
ImagePart image_part(const json& part, const std::string& param) {
  const json& value = field(part, "image_url");
  std::string url;
  std::string url_param = param + ".image_url";
  if (value.is_string()) {
    url = value.get<std::string>();
  } else if (value.is_object()) {
    url_param += ".url";
    const json& u = field(value, "url");
    if (!u.is_string()) wrong_type(url_param, "a string (a data URL)", u);
    url = u.get<std::string>();
    const json& detail = field(value, "detail");
    if (!detail.is_null() && (!detail.is_string() || (detail != "auto" && detail != "low" && detail != "high"))) {
      reject("'" + param + ".image_url.detail' must be auto, low or high", param + ".image_url.detail");
    }
  } else {
    wrong_type(url_param, "an object {\"url\": \"data:...\"}", value);
  }
  try {
    return ImagePart{vision::decode_data_url(url, "'" + url_param + "'"), url_param, url};
  } catch (const Error& e) {
    reject(e.what(), url_param, "invalid_image_url");
  }
}

// A message's content as one string: a string, or an array of parts, text joined and each image_url part as
// kMediaMarker (its bytes appended to `images`, in order).
json normalized_content(const json& content, const std::string& param, std::vector<ImagePart>& images) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) wrong_type(part_param, "an object", part);
    const json& type = field(part, "type");
    if (!type.is_string()) wrong_type(part_param + ".type", "a string", type);
    if (type.get<std::string>() == "image_url") {
      images.push_back(image_part(part, part_param));
      text += kMediaMarker;
      continue;
    }
    if (type.get<std::string>() != "text") {
      reject("content parts of type '" + type.get<std::string>() + "' are not supported (only 'text' and 'image_url')",
             part_param + ".type", "unsupported_content");
    }
    const json& t = field(part, "text");
    if (!t.is_string()) wrong_type(part_param + ".text", "a string", t);
    if (t.get<std::string>().find(kMediaMarker) != std::string::npos) {
      reject("'" + part_param + ".text' holds " + std::string(kMediaMarker) +
                 ", which marks where an image goes; send images as image_url parts",
             part_param + ".text", "invalid_value");
    }
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

json parse_messages(const json& root, std::vector<ImagePart>& images) {
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
    m["content"] = normalized_content(field(m, "content"), p + ".content", images);
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

// tool_choice: "none" and "auto" are what they say; "required" and a named function would need the reply held to a
// call, which only constrained decoding could do, so they are refused rather than answered with plain text.
ToolChoice parse_tool_choice(const json& root) {
  const json& v = field(root, "tool_choice");
  if (v.is_null()) return ToolChoice::Auto;
  const char* forms = "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") return ToolChoice::None;
    if (s == "auto") return ToolChoice::Auto;
    if (s == "required") {
      reject("'tool_choice' \"required\" is not supported: without constrained decoding this server cannot make the "
             "model call a tool; send \"auto\" (the model may call one) or \"none\"",
             "tool_choice", "unsupported_value");
    }
    reject(std::string("'tool_choice' must be ") + forms + ", not " + v.dump(), "tool_choice");
  }
  if (!v.is_object()) wrong_type("tool_choice", "a string or an object", v);
  const json& type = field(v, "type");
  const json& fn = field(v, "function");
  if (!type.is_string() || type.get<std::string>() != "function" || !fn.is_object() || !field(fn, "name").is_string()) {
    reject(std::string("'tool_choice' must be ") + forms, "tool_choice");
  }
  reject("'tool_choice' naming a function ('" + field(fn, "name").get<std::string>() +
             "') is not supported: without constrained decoding this server cannot make the model call it; send "
             "\"auto\" with the tools you offer, or \"none\"",
         "tool_choice", "unsupported_value");
}

// response_format: "text" is what every reply is; JSON replies would need constrained decoding.
void check_response_format(const json& root) {
  const json& v = field(root, "response_format");
  if (v.is_null()) return;
  if (!v.is_object()) wrong_type("response_format", "an object", v);
  const json& type = field(v, "type");
  if (!type.is_string()) wrong_type("response_format.type", "a string", type);
  const std::string t = type.get<std::string>();
  if (t == "text") return;
  if (t == "json_object" || t == "json_schema") {
    reject("'response_format' of type '" + t + "' is not supported: this server has no constrained decoding, so it "
               "cannot hold the reply to JSON; leave the field out or send {\"type\": \"text\"}",
           "response_format", "unsupported_value");
  }
  reject("'response_format.type' must be text, json_object or json_schema, not '" + t + "'", "response_format");
}

// logit_bias: {"token id": bias}, the bias in [-100, 100]; sorted by id, one entry per id.
std::vector<std::pair<int64_t, double>> parse_logit_bias(const json& root) {
  const json& bias = field(root, "logit_bias");
  if (bias.is_null()) return {};
  if (!bias.is_object()) wrong_type("logit_bias", "an object mapping token ids to biases", bias);
  std::vector<std::pair<int64_t, double>> out;
  for (auto it = bias.begin(); it != bias.end(); ++it) {
    const std::string& key = it.key();
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (key.empty() || ec != std::errc() || end != key.data() + key.size() || id < 0) {
      reject("'logit_bias' keys must be token ids written as decimal strings (\"42\"), not \"" + key.substr(0, 40) +
                 "\"",
             "logit_bias");
    }
    const json& v = it.value();
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < -100.0 || v.get<double>() > 100.0) {
      reject("'logit_bias' of token " + std::to_string(id) + " must be a number from -100 to 100, not " + v.dump(),
             "logit_bias");
    }
    out.emplace_back(id, v.get<double>());
  }
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].first == out[i - 1].first) {
      reject("'logit_bias' names token " + std::to_string(out[i].first) + " twice", "logit_bias");
    }
  }
  return out;
}

// Fields OpenAI documents that change what a reply is and that this server cannot honour: refused by name.
void refuse_unsupported(const json& root, Endpoint endpoint) {
  const auto present = [&](const char* name) { return !field(root, name).is_null(); };
  if (endpoint == Endpoint::ChatCompletions) {
    for (const char* name : {"functions", "function_call"}) {
      if (present(name)) {
        reject(std::string("'") + name + "' (the deprecated function calling) is not supported; send 'tools' and "
                   "'tool_choice' instead",
               name, "unsupported_parameter");
      }
    }
    if (present("audio")) reject("'audio' is not supported: replies are text only", "audio", "unsupported_parameter");
    const json& modalities = field(root, "modalities");
    if (!modalities.is_null() && modalities != json::array({"text"})) {
      reject("'modalities' must be [\"text\"] (replies are text only), not " + modalities.dump(), "modalities",
             "unsupported_value");
    }
    for (const char* name : {"reasoning_effort", "verbosity", "web_search_options"}) {
      if (present(name)) {
        reject(std::string("'") + name + "' is not supported by this server; leave it out", name,
               "unsupported_parameter");
      }
    }
    return;
  }
  if (const auto best_of = get_integer(root, "best_of", 1, 20); best_of && *best_of != 1) {
    reject("'best_of' must be 1: one candidate per request", "best_of", "unsupported_value");
  }
  if (get_bool(root, "echo").value_or(false)) {
    reject("'echo' is not supported: the reply holds the completion only", "echo", "unsupported_value");
  }
  const json& suffix = field(root, "suffix");
  if (!suffix.is_null() && !(suffix.is_string() && suffix.get<std::string>().empty())) {
    reject("'suffix' is not supported: this server does not insert text", "suffix", "unsupported_parameter");
  }
}

// `speculative`: false, or {"n_max": N} with N in 1..31 (speculative.n_max's range); true is refused (say n_max).
std::optional<int> parse_speculative(const json& root) {
  const json& v = field(root, "speculative");
  if (v.is_null()) return std::nullopt;
  if (v.is_boolean()) {
    if (!v.get<bool>()) return 0;
    reject("'speculative' is false or an object {\"n_max\": N}; true says nothing the launch does not", "speculative");
  }
  if (!v.is_object()) wrong_type("speculative", "false or an object {\"n_max\": N}", v);
  for (const auto& [key, value] : v.items()) {
    if (key != "n_max") reject("'speculative." + key + "' is not a field: the object has n_max only", "speculative");
    (void)value;
  }
  const json& n = field(v, "n_max");
  if (n.is_null()) reject("'speculative' needs n_max (1 to 31), or false", "speculative");
  if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > 31) {
    reject("'speculative.n_max' must be an integer from 1 to 31, not " + n.dump(), "speculative");
  }
  return static_cast<int>(n.get<int64_t>());
}

// Every field a request may carry: the ones read, the ones refused above unless harmless, and the ones ignored
// because they do not change the reply (README, Serving). Anything else is refused, as OpenAI does.
void refuse_unknown(const json& root, Endpoint endpoint) {
  static constexpr std::string_view kCommon[] = {
      "model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty",
      "frequency_penalty", "presence_penalty", "logit_bias", "seed", "stop", "n", "stream", "stream_options",
      "logprobs", "pcie_frac", "speculative", "user"};
  static constexpr std::string_view kChat[] = {
      "messages", "tools", "tool_choice", "parallel_tool_calls", "top_logprobs", "response_format", "functions",
      "function_call", "audio", "modalities", "reasoning_effort", "verbosity", "web_search_options",
      // ignored: bookkeeping and hints that leave the reply as it is
      "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key", "prediction"};
  static constexpr std::string_view kCompletions[] = {"prompt", "best_of", "echo", "suffix"};
  const auto in = [](std::span<const std::string_view> names, const std::string& key) {
    return std::find(names.begin(), names.end(), key) != names.end();
  };
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    if (it.value().is_null() || in(kCommon, key)) continue;
    if (in(endpoint == Endpoint::ChatCompletions ? std::span<const std::string_view>(kChat)
                                                 : std::span<const std::string_view>(kCompletions),
           key)) {
      continue;
    }
    reject("unrecognized request argument supplied: '" + key.substr(0, 60) + "' (the fields this server takes are "
               "listed in its README, Serving)",
           key.substr(0, 60), "unknown_parameter");
  }
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
  // The required field first: a prompt sent to the chat route (or messages to completions) is missing its own.
  if (endpoint == Endpoint::ChatCompletions) {
    r.messages = parse_messages(root, r.images);
  } else {
    r.prompt = parse_prompt(root);
  }
  refuse_unknown(root, endpoint);
  refuse_unsupported(root, endpoint);
  if (endpoint == Endpoint::ChatCompletions) {
    r.tools = parse_tools(root);
    r.tool_choice = parse_tool_choice(root);
    r.parallel_tool_calls = get_bool(root, "parallel_tool_calls").value_or(true);
    check_response_format(root);
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
  r.frequency_penalty = get_number(root, "frequency_penalty", -2.0, 2.0);
  r.presence_penalty = get_number(root, "presence_penalty", -2.0, 2.0);
  r.logit_bias = parse_logit_bias(root);
  if (const auto k = get_integer(root, "top_k", 0, std::numeric_limits<int>::max())) r.top_k = static_cast<int>(*k);
  if (const auto seed = get_integer(root, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    r.seed = static_cast<uint64_t>(*seed);
  }
  r.stop = parse_stop(root);
  if (const auto n = get_integer(root, "n", 1, std::numeric_limits<int>::max()); n && *n != 1) {
    reject("'n' must be 1: this server answers one choice per request (send n requests for n choices)", "n",
           "unsupported_value");
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
  r.speculative_n_max = parse_speculative(root);
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
    std::vector<ImagePart> images;  // the rendered text shows where each goes (its marker)
    r.messages = parse_messages(root, images);
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
