// `strata gate --check`: a re-run against the saved run, id for id, and what else differs between the two runs
// (model identity, launch keys), which is reported but never refuses the comparison.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "../inspect/text_format.hpp"
#include "strata/error.hpp"
#include "strata/gate.hpp"

namespace strata::gate {
namespace {

using Json = nlohmann::ordered_json;

// The first index where the two lists differ, one of them having ended there counting as a difference;
// nullopt when they are equal.
std::optional<size_t> first_difference(std::span<const TokenId> a, std::span<const TokenId> b) {
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i) {
    if (a[i] != b[i]) return i;
  }
  if (a.size() != b.size()) return common;
  return std::nullopt;
}

std::optional<TokenId> id_at(std::span<const TokenId> ids, size_t i) {
  return i < ids.size() ? std::optional<TokenId>(ids[i]) : std::nullopt;
}

std::string id_text(std::optional<TokenId> id, const Case& side, const char* list, const Tokenizer& tok) {
  if (!id) {
    return std::string("nothing (") + list + " end there" +
           (std::string_view(list) == "ids" ? ", stop " + side.stop : std::string()) + ")";
  }
  if (*id < 0 || static_cast<size_t>(*id) >= tok.size()) return std::to_string(*id) + " (outside this vocabulary)";
  return std::to_string(*id) + " " + inspect::detail::quote(tok.piece(*id));
}

// Every leaf of a JSON object under its dotted key. Arrays are leaves; an empty object has none, so that a
// section gaining its first entry shows as that entry alone.
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, const Json*>>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) flatten(value, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  out.emplace_back(prefix, &j);
}

Json parse_object(const std::string& text, const char* which) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error&) {
    throw Error(std::string("gate: the ") + which + " launch is not JSON");
  }
  if (!j.is_object()) throw Error(std::string("gate: the ") + which + " launch is not a JSON object");
  return j;
}

}  // namespace

Verdict compare_case(const Case& saved, const Case& now, size_t n_compare) {
  Verdict v;
  if (const auto at = first_difference(saved.prompt_ids, now.prompt_ids)) {
    v.kind = Verdict::Kind::PromptDiffers;
    v.position = *at;
    v.saved = id_at(saved.prompt_ids, *at);
    v.now = id_at(now.prompt_ids, *at);
    return v;
  }
  // Equal placeholders say nothing of the picture: an image is the same only when its bytes are.
  for (size_t k = 0; k < std::max(saved.image_sha256.size(), now.image_sha256.size()); ++k) {
    if (k >= saved.image_sha256.size() || k >= now.image_sha256.size() || saved.image_sha256[k] != now.image_sha256[k]) {
      v.kind = Verdict::Kind::ImageDiffers;
      v.position = k;
      return v;
    }
  }
  const std::span<const TokenId> a(saved.ids.data(), std::min(saved.ids.size(), n_compare));
  const std::span<const TokenId> b(now.ids.data(), std::min(now.ids.size(), n_compare));
  if (const auto at = first_difference(a, b)) {
    v.kind = Verdict::Kind::IdsDiffer;
    v.position = *at;
    v.saved = id_at(a, *at);
    v.now = id_at(b, *at);
    return v;
  }
  v.compared = a.size();
  return v;
}

std::string verdict_text(const Verdict& v, const Case& saved, const Case& now, const Tokenizer& tokenizer) {
  switch (v.kind) {
    case Verdict::Kind::Pass:
      return "PASS (" + std::to_string(v.compared) + " ids" +
             (saved.stop == "eos" && v.compared == saved.ids.size() ? ", then end of text" : "") + ")";
    case Verdict::Kind::PromptDiffers:
      return "FAIL: prompt_ids differ at position " + std::to_string(v.position) + ": saved " +
             id_text(v.saved, saved, "prompt_ids", tokenizer) + ", now " +
             id_text(v.now, now, "prompt_ids", tokenizer) +
             ((!v.saved || !v.now) && (saved.cut_from > 0 || now.cut_from > 0)
                  ? " (the prompt was cut to fit another runtime.context or -n)"
                  : " (the tokenizer or the prompt text changed)");
    case Verdict::Kind::ImageDiffers: {
      const auto hash = [&](const Case& c) {
        return v.position < c.image_sha256.size() ? "sha256 " + c.image_sha256[v.position].substr(0, 16) + "..."
                                                   : std::string("no image");
      };
      const std::string source = v.position < saved.images.size() ? " (" + saved.images[v.position].substr(0, 80) + ")" : "";
      return "FAIL: image " + std::to_string(v.position) + source + " differs: saved " + hash(saved) + ", now " +
             hash(now) + " (the image file changed since the save)";
    }
    case Verdict::Kind::IdsDiffer:
      return "FAIL: ids differ at position " + std::to_string(v.position) + " (sequence position " +
             std::to_string(saved.prompt_ids.size() + v.position) + "): saved " +
             id_text(v.saved, saved, "ids", tokenizer) + ", now " + id_text(v.now, now, "ids", tokenizer);
  }
  return {};
}

std::vector<std::string> launch_differences(const std::string& saved_json, const std::string& now_json) {
  const Json saved = parse_object(saved_json, "saved");
  const Json now = parse_object(now_json, "current");
  std::vector<std::pair<std::string, const Json*>> a, b;
  flatten(saved, "", a);
  flatten(now, "", b);
  const auto find = [](const std::vector<std::pair<std::string, const Json*>>& list, const std::string& key) {
    const auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == key; });
    return it == list.end() ? nullptr : it->second;
  };
  const auto shown = [](const Json* j) { return j == nullptr ? std::string("(absent)") : j->dump(); };
  std::vector<std::string> out;
  for (const auto& [key, value] : a) {
    const Json* other = find(b, key);
    if (other == nullptr || *other != *value) out.push_back(key + ": saved " + shown(value) + ", now " + shown(other));
  }
  for (const auto& [key, value] : b) {
    if (find(a, key) == nullptr) out.push_back(key + ": saved (absent), now " + shown(value));
  }
  return out;
}

std::vector<std::string> model_differences(const ModelIdentity& saved, const ModelIdentity& now) {
  std::vector<std::string> out;
  const auto field = [&](const char* name, const std::string& a, const std::string& b) {
    if (a != b) out.push_back(std::string(name) + ": saved " + a + ", now " + b);
  };
  field("file", saved.file, now.file);
  field("bytes", std::to_string(saved.bytes), std::to_string(now.bytes));
  field("architecture", saved.architecture, now.architecture);
  field("n_vocab", std::to_string(saved.n_vocab), std::to_string(now.n_vocab));
  field("header_hash", saved.header_hash, now.header_hash);
  field("vocab_hash", saved.vocab_hash, now.vocab_hash);
  return out;
}

bool same_vocabulary(const ModelIdentity& a, const ModelIdentity& b) {
  return a.n_vocab == b.n_vocab && a.vocab_hash == b.vocab_hash;
}

}  // namespace strata::gate
