#include "strata/engine_protocol.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace strata::protocol {
namespace {

constexpr const char* kControlList = "PEER_DETACH, PEER_ATTACH, POOL_HOLD n, LINK_SERVE 0|1, CANCEL [id]";

// The line cut to a length that fits one answer line, with control characters shown as '?'.
std::string quoted(std::string_view line) {
  std::string out;
  for (char c : line.substr(0, 60)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (line.size() > 60) out += "...";
  return "'" + out + "'";
}

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::variant<ControlLine, std::string> parse_control_line(std::string_view line) {
  const std::vector<std::string_view> w = words(line);
  if (w.empty()) return std::string("an empty line is neither a request nor a control line");
  const auto no_argument = [&](ControlKind kind) -> std::variant<ControlLine, std::string> {
    if (w.size() != 1) return std::string(w[0]) + " takes no argument: " + quoted(line);
    return ControlLine{kind, 0, {}};
  };
  if (w[0] == "PEER_DETACH") return no_argument(ControlKind::PeerDetach);
  if (w[0] == "PEER_ATTACH") return no_argument(ControlKind::PeerAttach);
  if (w[0] == "CANCEL") {
    if (w.size() == 1) return ControlLine{ControlKind::Cancel, 0, {}};
    // The id as the request gave it: the rest of the line, one JSON number or string.
    const size_t at = line.find("CANCEL") + 6;
    const std::string_view rest = line.substr(at);
    const nlohmann::json id = nlohmann::json::parse(rest, nullptr, false);
    if (id.is_discarded() || !(id.is_number() || id.is_string())) {
      return "CANCEL takes a request id, a JSON number or string (CANCEL 7, CANCEL \"a\"), or nothing (the running "
             "request), not " + quoted(line);
    }
    return ControlLine{ControlKind::Cancel, 0, id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  if (w[0] == "POOL_HOLD" || w[0] == "LINK_SERVE") {
    const bool hold = w[0] == "POOL_HOLD";
    const std::string form = hold ? "POOL_HOLD n (n a worker count, 0 = every worker)" : "LINK_SERVE 0|1";
    if (w.size() != 2) return std::string(w[0]) + " takes one number: " + form + ", not " + quoted(line);
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(w[1].data(), w[1].data() + w[1].size(), n);
    if (ec != std::errc() || end != w[1].data() + w[1].size() || (!hold && n > 1)) {
      return std::string(w[0]) + ": '" + std::string(w[1].substr(0, 20)) + "' is not " + (hold ? "a count" : "0 or 1") +
             "; the form is " + form;
    }
    return ControlLine{hold ? ControlKind::PoolHold : ControlKind::LinkServe, n, {}};
  }
  return "unknown line " + quoted(line) + ": a request is one JSON object; control lines are " + kControlList;
}

std::string control_name(const ControlLine& c) {
  switch (c.kind) {
    case ControlKind::PeerDetach: return "PEER_DETACH";
    case ControlKind::PeerAttach: return "PEER_ATTACH";
    case ControlKind::PoolHold: return "POOL_HOLD " + std::to_string(c.value);
    case ControlKind::LinkServe: return "LINK_SERVE " + std::to_string(c.value);
    case ControlKind::Cancel: return c.id.empty() ? "CANCEL" : "CANCEL " + c.id;
  }
  return "?";
}

ParsedRequest parse_engine_request(std::string_view line, const CompletionOptions& defaults, uint32_t n_vocab) {
  using json = nlohmann::json;
  ParsedRequest out;
  const json body = json::parse(line, nullptr, false);
  if (body.is_discarded()) {
    out.error = "the request is not valid JSON: " + quoted(line);
    return out;
  }
  if (!body.is_object()) {
    out.error = "a request is one JSON object, not " + std::string(body.type_name());
    return out;
  }
  if (body.contains("id")) out.id = body["id"].dump(-1, ' ', false, json::error_handler_t::replace);
  EngineRequest r;
  r.options = defaults;
  const auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  if (!body.contains("id") || !(body["id"].is_string() || body["id"].is_number_integer())) {
    return fail("\"id\" is required: a string or an integer that the answer lines carry");
  }
  r.id = out.id;
  for (auto item = body.begin(); item != body.end(); ++item) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const std::string& key = item.key();
    const json& value = item.value();
    const auto number = [&](double lo, double hi) -> std::optional<double> {
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < lo || value.get<double>() > hi) {
        return std::nullopt;
      }
      return value.get<double>();
    };
    if (key == "id") continue;
    if (key == "prompt") {
      if (!value.is_string()) return fail("\"prompt\" must be a string");
      r.prompt = value.get<std::string>();
    } else if (key == "prompt_ids") {
      if (!value.is_array() || value.empty()) return fail("\"prompt_ids\" must be a non-empty array of token ids");
      for (const json& id : value) {
        if (!id.is_number_integer() || id.get<int64_t>() < -1 || id.get<int64_t>() >= n_vocab) {
          return fail("\"prompt_ids\" holds " + id.dump() + ", not a token id of this vocabulary (0 to " +
                      std::to_string(n_vocab - 1) + ") nor -1 (where an image of \"images\" goes)");
        }
        r.prompt_ids.push_back(static_cast<TokenId>(id.get<int64_t>()));
      }
    } else if (key == "images") {
      if (!value.is_array() || value.empty()) {
        return fail("\"images\" must be a non-empty array of image files or data URLs");
      }
      for (const json& im : value) {
        if (!im.is_string() || im.get<std::string>().empty()) {
          return fail("\"images\" holds " + im.dump().substr(0, 40) + ", not an image file or a data URL");
        }
        r.images.push_back(im.get<std::string>());
      }
    } else if (key == "max_tokens") {
      if (!value.is_number_integer() || value.get<int64_t>() < -1 || value.get<int64_t>() > (1 << 30)) {
        return fail("\"max_tokens\" must be an integer from -1 (until the end or the context is full) up");
      }
      r.options.max_tokens = static_cast<int>(value.get<int64_t>());
    } else if (key == "temperature") {
      const auto v = number(0, 100);
      if (!v) return fail("\"temperature\" must be a number from 0 (greedy) to 100");
      r.options.sampling.temperature = static_cast<float>(*v);
    } else if (key == "top_k") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > n_vocab) {
        return fail("\"top_k\" must be an integer from 0 (off) to the vocabulary's size");
      }
      r.options.sampling.top_k = static_cast<int>(value.get<int64_t>());
    } else if (key == "top_p" || key == "min_p") {
      const auto v = number(0, 1);
      if (!v) return fail("\"" + key + "\" must be a number from 0 to 1");
      (key == "top_p" ? r.options.sampling.top_p : r.options.sampling.min_p) = static_cast<float>(*v);
    } else if (key == "frequency_penalty" || key == "presence_penalty") {
      const auto v = number(-2, 2);
      if (!v) return fail("\"" + key + "\" must be a number from -2 to 2");
      (key == "frequency_penalty" ? r.options.sampling.frequency_penalty : r.options.sampling.presence_penalty) =
          static_cast<float>(*v);
    } else if (key == "logit_bias") {
      if (!value.is_object()) return fail("\"logit_bias\" must be an object mapping token ids (\"42\") to biases");
      r.options.sampling.logit_bias.clear();
      for (auto b = value.begin(); b != value.end(); ++b) {
        const std::string& k = b.key();
        uint32_t id = 0;
        const auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), id);
        if (k.empty() || ec != std::errc() || end != k.data() + k.size() || id >= n_vocab) {
          return fail("\"logit_bias\" holds the key \"" + k.substr(0, 20) +
                      "\", not a token id of this vocabulary (0 to " + std::to_string(n_vocab - 1) + ")");
        }
        const json& bias = b.value();
        if (!bias.is_number() || !std::isfinite(bias.get<double>()) || std::fabs(bias.get<double>()) > 100) {
          return fail("\"logit_bias\" of token " + k + " must be a number from -100 to 100");
        }
        r.options.sampling.logit_bias.emplace_back(static_cast<TokenId>(id), static_cast<float>(bias.get<double>()));
      }
      std::sort(r.options.sampling.logit_bias.begin(), r.options.sampling.logit_bias.end());
      const auto& lb = r.options.sampling.logit_bias;
      for (size_t i = 1; i < lb.size(); ++i) {
        if (lb[i].first == lb[i - 1].first) return fail("\"logit_bias\" names token " + std::to_string(lb[i].first) + " twice");
      }
    } else if (key == "seed") {
      if (!value.is_number_unsigned()) return fail("\"seed\" must be a non-negative integer");
      r.options.sampling.seed = value.get<uint64_t>();
    } else if (key == "stop") {
      if (!value.is_array()) return fail("\"stop\" must be an array of strings");
      r.options.stop.clear();
      for (const json& s : value) {
        if (!s.is_string() || s.get<std::string>().empty()) return fail("\"stop\" must hold non-empty strings");
        r.options.stop.push_back(s.get<std::string>());
      }
    } else if (key == "end_tokens") {
      if (!value.is_array()) return fail("\"end_tokens\" must be an array of token ids");
      for (const json& id : value) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n_vocab) {
          return fail("\"end_tokens\" holds " + id.dump() + ", not a token id of this vocabulary (0 to " +
                      std::to_string(n_vocab - 1) + ")");
        }
        r.options.end_tokens.push_back(static_cast<TokenId>(id.get<int64_t>()));
      }
    } else if (key == "stream") {
      if (!value.is_boolean()) return fail("\"stream\" must be true or false");
      r.stream = value.get<bool>();
    } else {
      return fail("unknown field \"" + key.substr(0, 40) +
                  "\"; a request has id, prompt or prompt_ids, images, max_tokens, temperature, top_k, top_p, min_p, "
                  "frequency_penalty, presence_penalty, logit_bias, seed, stop, end_tokens, stream");
    }
  }
  if (r.prompt.has_value() == !r.prompt_ids.empty()) return fail("a request has exactly one of \"prompt\" and \"prompt_ids\"");
  if (!r.prompt_ids.empty()) {
    const auto marks = static_cast<size_t>(std::count(r.prompt_ids.begin(), r.prompt_ids.end(), TokenId{-1}));
    if (marks != r.images.size()) {
      return fail("\"prompt_ids\" holds " + std::to_string(marks) + " image marks (-1) and \"images\" " +
                  std::to_string(r.images.size()) + " images: give one image per mark");
    }
  }
  out.request = std::move(r);
  return out;
}

}  // namespace strata::protocol
