// The expert profile's file: JSON text, checked field by field on the way in.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>

#include "strata/error.hpp"
#include "strata/experts/expert_profile.hpp"

namespace strata::experts {

namespace {

using Json = nlohmann::json;

// A profile is one integer per expert; anything near this size is not one.
constexpr uint64_t kMaxFileBytes = uint64_t{64} << 20;

[[noreturn]] void fail(const std::string& origin, const std::string& message) { throw Error(origin + ": " + message); }

void reject_unknown_keys(const Json& object, std::initializer_list<const char*> known, const std::string& where,
                         const std::string& origin) {
  for (const auto& item : object.items()) {
    bool found = false;
    std::string list;
    for (const char* k : known) {
      found = found || item.key() == k;
      list += std::string(list.empty() ? "" : ", ") + k;
    }
    if (!found) fail(origin, "unknown key \"" + item.key() + "\" in " + where + " (known: " + list + ")");
  }
}

const Json& member(const Json& object, const char* key, const std::string& where, const std::string& origin) {
  const auto it = object.find(key);
  if (it == object.end()) fail(origin, where + " has no \"" + key + "\"");
  return *it;
}

uint64_t whole_number(const Json& value, const std::string& name, const std::string& origin) {
  if (!value.is_number_unsigned()) fail(origin, name + " is " + value.dump() + ": it must be a whole number >= 0");
  return value.get<uint64_t>();
}

uint32_t count_field(const Json& value, const std::string& name, const std::string& origin) {
  const uint64_t v = whole_number(value, name, origin);
  if (v == 0 || v > UINT32_MAX) fail(origin, name + " is " + value.dump() + ": it must be between 1 and 4294967295");
  return static_cast<uint32_t>(v);
}

}  // namespace

std::string ExpertProfile::to_json() const {
  std::string text = "{\n";
  text += "  \"format\": " + Json(kFormatName).dump() + ",\n";
  text += "  \"version\": " + std::to_string(kFormatVersion) + ",\n";
  text += "  \"model\": {\"fingerprint\": " + Json(identity_.fingerprint).dump() +
          ", \"n_layer\": " + std::to_string(identity_.n_layer) +
          ", \"n_expert\": " + std::to_string(identity_.n_expert);
  if (!info_.model_name.empty()) text += ", \"name\": " + Json(info_.model_name).dump();
  if (!info_.model_path.empty()) text += ", \"path\": " + Json(info_.model_path).dump();
  if (info_.file_bytes > 0) text += ", \"file_bytes\": " + std::to_string(info_.file_bytes);
  text += "},\n";
  Json source = Json::object();
  if (!info_.prompts.empty()) source["prompts"] = info_.prompts;
  if (info_.prompt_count > 0) source["prompt_count"] = info_.prompt_count;
  if (info_.decode_tokens > 0) source["decode_tokens"] = info_.decode_tokens;
  if (!info_.backend.empty()) source["backend"] = info_.backend;
  if (!info_.recorded_by.empty()) source["recorded_by"] = info_.recorded_by;
  if (!source.empty()) {
    std::string fields;
    for (const auto& item : source.items()) fields += (fields.empty() ? "" : ", ") + Json(item.key()).dump() + ": " + item.value().dump();
    text += "  \"source\": {" + fields + "},\n";
  }
  text += "  \"positions\": " + std::to_string(positions_) + ",\n";
  text += "  \"counts\": [\n";
  for (uint32_t l = 0; l < identity_.n_layer; ++l) {
    text += "    [";
    for (uint32_t e = 0; e < identity_.n_expert; ++e) {
      if (e > 0) text += ", ";
      text += std::to_string(counts_[key_space().index({l, e})]);
    }
    text += l + 1 < identity_.n_layer ? "],\n" : "]\n";
  }
  text += "  ]\n}\n";
  return text;
}

ExpertProfile ExpertProfile::from_json(std::string_view text, const std::string& origin,
                                       const ModelIdentity& expected) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // The parser counts bytes from 1; messages elsewhere give offsets from 0.
    fail(origin, "not an expert profile: not valid JSON at byte " + std::to_string(e.byte > 0 ? e.byte - 1 : 0) +
                     ": delete the file or point experts.profile to a profile saved by strata");
  }
  if (!doc.is_object())
    fail(origin, std::string("not an expert profile: the file holds a JSON ") + doc.type_name() + ", not an object");
  if (!doc.contains("format") || !doc["format"].is_string() || doc["format"].get<std::string>() != kFormatName)
    fail(origin, std::string("not an expert profile: \"format\" is ") +
                     (doc.contains("format") ? doc["format"].dump() : std::string("missing")) + ", expected \"" +
                     std::string(kFormatName) + "\"");
  const Json& version = member(doc, "version", "the profile", origin);
  if (!version.is_number_integer()) fail(origin, "\"version\" is " + version.dump() + ": it must be a whole number");
  // Version 1 is version 2 without the model's name, path and size and without "source".
  const int64_t v = version.get<int64_t>();
  if (v != 1 && v != kFormatVersion)
    fail(origin, "expert profile version " + version.dump() + "; this build reads versions 1 and " +
                     std::to_string(kFormatVersion) + ": record the profile again with this build (strata profile)");
  if (v == 1)
    reject_unknown_keys(doc, {"format", "version", "model", "positions", "counts"}, "the profile", origin);
  else
    reject_unknown_keys(doc, {"format", "version", "model", "source", "positions", "counts"}, "the profile", origin);

  const Json& model = member(doc, "model", "the profile", origin);
  if (!model.is_object()) fail(origin, std::string("\"model\" is a JSON ") + model.type_name() + ", not an object");
  if (v == 1)
    reject_unknown_keys(model, {"fingerprint", "n_layer", "n_expert"}, "\"model\"", origin);
  else
    reject_unknown_keys(model, {"fingerprint", "n_layer", "n_expert", "name", "path", "file_bytes"}, "\"model\"", origin);
  ProfileInfo info;
  const auto text_field = [&](const Json& object, const char* key, const std::string& where) -> std::string {
    const auto it = object.find(key);
    if (it == object.end()) return {};
    if (!it->is_string()) fail(origin, where + key + " is " + it->dump() + ": it must be a string");
    return it->get<std::string>();
  };
  const auto number_field = [&](const Json& object, const char* key, const std::string& where) -> uint64_t {
    const auto it = object.find(key);
    return it == object.end() ? 0 : whole_number(*it, where + key, origin);
  };
  info.model_name = text_field(model, "name", "model.");
  info.model_path = text_field(model, "path", "model.");
  info.file_bytes = number_field(model, "file_bytes", "model.");
  if (const auto it = doc.find("source"); it != doc.end()) {
    if (!it->is_object()) fail(origin, std::string("\"source\" is a JSON ") + it->type_name() + ", not an object");
    reject_unknown_keys(*it, {"prompts", "prompt_count", "decode_tokens", "backend", "recorded_by"}, "\"source\"",
                        origin);
    info.prompts = text_field(*it, "prompts", "source.");
    info.prompt_count = number_field(*it, "prompt_count", "source.");
    info.decode_tokens = number_field(*it, "decode_tokens", "source.");
    info.backend = text_field(*it, "backend", "source.");
    info.recorded_by = text_field(*it, "recorded_by", "source.");
  }
  const Json& fingerprint = member(model, "fingerprint", "\"model\"", origin);
  if (!fingerprint.is_string()) fail(origin, "model.fingerprint is " + fingerprint.dump() + ": it must be a string");
  ModelIdentity id;
  id.fingerprint = fingerprint.get<std::string>();
  id.n_layer = count_field(member(model, "n_layer", "\"model\"", origin), "model.n_layer", origin);
  id.n_expert = count_field(member(model, "n_expert", "\"model\"", origin), "model.n_expert", origin);

  const std::string fix =
      std::string(info.model_name.empty() ? "" : " (it was recorded with " + info.model_name + ")") +
      ": record a profile with this model (strata profile --model M) or remove experts.profile";
  if (id.n_layer != expected.n_layer)
    fail(origin, "the profile is of a model with " + std::to_string(id.n_layer) + " layers; this model has " +
                     std::to_string(expected.n_layer) + fix);
  if (id.n_expert != expected.n_expert)
    fail(origin, "the profile is of a model with " + std::to_string(id.n_expert) +
                     " experts per layer; this model has " + std::to_string(expected.n_expert) + fix);
  if (id.fingerprint != expected.fingerprint)
    fail(origin,
         "the profile is of model \"" + id.fingerprint + "\"; this model is \"" + expected.fingerprint + "\"" + fix);

  ExpertProfile profile(id);
  profile.info_ = std::move(info);
  profile.positions_ = whole_number(member(doc, "positions", "the profile", origin), "\"positions\"", origin);
  const Json& counts = member(doc, "counts", "the profile", origin);
  if (!counts.is_array()) fail(origin, std::string("\"counts\" is a JSON ") + counts.type_name() + ", not an array");
  if (counts.size() != id.n_layer)
    fail(origin, "\"counts\" has " + std::to_string(counts.size()) + " rows; the model has " +
                     std::to_string(id.n_layer) + " layers");
  for (uint32_t l = 0; l < id.n_layer; ++l) {
    const Json& row = counts[l];
    const std::string row_name = "counts[" + std::to_string(l) + "]";
    if (!row.is_array()) fail(origin, row_name + " is a JSON " + row.type_name() + ", not an array");
    if (row.size() != id.n_expert)
      fail(origin, row_name + " has " + std::to_string(row.size()) + " entries; the model has " +
                       std::to_string(id.n_expert) + " experts per layer");
    for (uint32_t e = 0; e < id.n_expert; ++e) {
      const std::string name = row_name + "[" + std::to_string(e) + "]";
      const uint64_t n = whole_number(row[e], name, origin);
      // An expert serves a position at most once, so a larger count cannot come from a real run.
      if (n > profile.positions_)
        fail(origin, name + " is " + std::to_string(n) + ", more than the " + std::to_string(profile.positions_) +
                         " positions recorded: the file is damaged; record the profile again");
      profile.counts_[profile.key_space().index({l, e})] = n;
    }
  }
  return profile;
}

void ExpertProfile::save(const std::filesystem::path& path) const {
  const std::filesystem::path temp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    const std::string text = to_json();
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out)
      throw Error("expert profile: cannot write " + temp.string() + ": " + std::strerror(errno) +
                  ": check that the folder exists and is writable");
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp);
    throw Error("expert profile: cannot rename " + temp.string() + " to " + path.string() + ": " + ec.message());
  }
}

ExpertProfile ExpertProfile::load(const std::filesystem::path& path, const ModelIdentity& expected) {
  const std::string origin = path.string();
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error("experts.profile: " + origin + " is not a regular file: point it to a profile");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("experts.profile: cannot read " + origin + ": " + std::strerror(errno) +
                ": check the path, or remove experts.profile to start from a uniform cache");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes)
    fail(origin, "not an expert profile: " + std::to_string(size) + " bytes, and a profile is at most " +
                     std::to_string(kMaxFileBytes) + " bytes");
  std::ostringstream text;
  text << in.rdbuf();
  return from_json(text.str(), origin, expected);
}

}  // namespace strata::experts
