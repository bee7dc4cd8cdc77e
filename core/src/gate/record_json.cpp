// The saved file of `strata gate --save`, and its strict reader: every key checked for presence and type, no
// unknown keys, ids inside the saved vocabulary, so that a damaged or hand-edited file is refused with the JSON
// path of the problem instead of being compared.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "text_file.hpp"

namespace strata::gate {
namespace {

using Json = nlohmann::ordered_json;

const char* const kFormatName = "strata gate";

Json identity_json(const ModelIdentity& m) {
  return Json{{"file", m.file},           {"bytes", m.bytes},
              {"architecture", m.architecture}, {"n_vocab", m.n_vocab},
              {"header_hash", m.header_hash},   {"vocab_hash", m.vocab_hash}};
}

// One prompt, a key per line and each value on its line (id lists are long: one line each keeps the file short
// and a diff of two saved runs readable).
std::string case_text(const Case& c) {
  const auto line = [](const char* key, const Json& value) {
    return std::string("   \"") + key + "\": " + value.dump(-1, ' ', false, Json::error_handler_t::strict);
  };
  std::string out = "  {\n" + line("name", c.name) + ",\n" + line("text", c.text) + ",\n" +
                    line("prompt_ids", c.prompt_ids) + ",\n";
  if (c.cut_from > 0) out += line("cut_from", c.cut_from) + ",\n";
  if (!c.images.empty()) out += line("images", c.images) + ",\n" + line("image_sha256", c.image_sha256) + ",\n";
  return out + line("ids", c.ids) + ",\n" + line("stop", c.stop) + "\n  }";
}

// Reads one JSON object strictly: each key is taken once by a getter, and done() refuses the keys left over.
class Reader {
 public:
  Reader(const Json& object, std::string path, const std::string& source) : j_(object), path_(std::move(path)), source_(source) {
    if (!j_.is_object()) fail(path_.empty() ? "the top level is not an object" : path_ + " is not an object");
  }

  const Json& at(const std::string& key, bool (Json::*is)() const noexcept, const char* type) {
    const auto it = j_.find(key);
    if (it == j_.end()) fail("missing key " + name(key));
    if (!((*it).*is)()) fail(name(key) + " is not " + type);
    taken_.insert(key);
    return *it;
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  std::string string(const std::string& key) { return at(key, &Json::is_string, "a string").get<std::string>(); }
  uint64_t unsigned_int(const std::string& key) {
    return at(key, &Json::is_number_unsigned, "a non-negative integer").get<uint64_t>();
  }
  std::vector<TokenId> ids(const std::string& key, uint64_t n_vocab) {
    const Json& list = at(key, &Json::is_array, "an array of token ids");
    std::vector<TokenId> out;
    out.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_number_unsigned() || list[i].get<uint64_t>() >= n_vocab) {
        fail(name(key) + "[" + std::to_string(i) + "] is " + list[i].dump() + ", not a token id of the saved " +
             std::to_string(n_vocab) + "-token vocabulary");
      }
      out.push_back(static_cast<TokenId>(list[i].get<uint64_t>()));
    }
    return out;
  }
  std::vector<std::string> strings(const std::string& key) {
    const Json& list = at(key, &Json::is_array, "an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) fail(name(key) + "[" + std::to_string(i) + "] is not a string");
      out.push_back(list[i].get<std::string>());
    }
    return out;
  }
  void done() const {
    for (const auto& [key, value] : j_.items()) {
      if (taken_.count(key) == 0) fail("unknown key " + name(key));
    }
  }
  std::string name(const std::string& key) const { return path_.empty() ? "'" + key + "'" : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(source_ + ": " + problem + "; this is not a file written by `strata gate --save` (or it was edited): "
                "save a new one with --save");
  }

 private:
  const Json& j_;
  std::string path_;
  const std::string& source_;
  std::set<std::string> taken_;
};

ModelIdentity read_identity(const Json& j, const std::string& source) {
  Reader r(j, "model", source);
  ModelIdentity m;
  m.file = r.string("file");
  m.bytes = r.unsigned_int("bytes");
  m.architecture = r.string("architecture");
  m.n_vocab = r.unsigned_int("n_vocab");
  if (m.n_vocab == 0) r.fail("model.n_vocab is 0");
  m.header_hash = r.string("header_hash");
  m.vocab_hash = r.string("vocab_hash");
  r.done();
  return m;
}

Case read_case(const Json& j, const std::string& path, uint64_t n_vocab, uint64_t n_predict, const std::string& source) {
  Reader r(j, path, source);
  Case c;
  c.name = r.string("name");
  if (c.name.empty()) r.fail(r.name("name") + " is empty");
  c.text = r.string("text");
  c.prompt_ids = r.ids("prompt_ids", n_vocab);
  if (c.prompt_ids.empty()) r.fail(r.name("prompt_ids") + " is empty");
  if (r.has("cut_from")) {
    c.cut_from = r.unsigned_int("cut_from");
    if (c.cut_from <= c.prompt_ids.size()) {
      r.fail(r.name("cut_from") + " (" + std::to_string(c.cut_from) + ") is not more than the " +
             std::to_string(c.prompt_ids.size()) + " prompt ids kept");
    }
  }
  if (r.has("images") || r.has("image_sha256")) {
    c.images = r.strings("images");
    c.image_sha256 = r.strings("image_sha256");
    if (c.images.empty() || c.images.size() != c.image_sha256.size()) {
      r.fail(r.name("images") + " and " + r.name("image_sha256") + " must name the same non-zero number of images");
    }
    for (const std::string& h : c.image_sha256) {
      if (h.size() != 64 || h.find_first_not_of("0123456789abcdef") != std::string::npos) {
        r.fail(r.name("image_sha256") + " holds \"" + h.substr(0, 70) + "\", not 64 lowercase hex digits");
      }
    }
  }
  c.ids = r.ids("ids", n_vocab);
  c.stop = r.string("stop");
  if (c.stop == "n_predict") {
    if (c.ids.size() != n_predict) {
      r.fail(r.name("ids") + " has " + std::to_string(c.ids.size()) + " ids; stop \"n_predict\" means n_predict (" +
             std::to_string(n_predict) + ")");
    }
  } else if (c.stop == "eos") {
    if (c.ids.size() >= n_predict) {
      r.fail(r.name("ids") + " has " + std::to_string(c.ids.size()) + " ids; stop \"eos\" means fewer than n_predict (" +
             std::to_string(n_predict) + ")");
    }
  } else {
    r.fail(r.name("stop") + " is \"" + c.stop + "\", not \"n_predict\" or \"eos\"");
  }
  r.done();
  return c;
}

}  // namespace

std::string to_json(const Record& record) {
  Json launch;
  try {
    launch = Json::parse(record.launch_json);
  } catch (const Json::parse_error&) {
    throw Error("gate: the launch to save is not JSON");
  }
  const Json doc{{"format", kFormatName},
                 {"format_version", kFormatVersion},
                 {"strata_version", record.strata_version},
                 {"n_predict", record.n_predict},
                 {"model", identity_json(record.model)},
                 {"backend", record.backend},
                 {"backend_detail", record.backend_detail},
                 {"launch_file", record.launch_file},
                 {"launch", launch}};
  std::string text = doc.dump(1, ' ', false, Json::error_handler_t::strict);
  text.erase(text.rfind('\n'));  // the closing brace: reopened to append the prompts
  text += ",\n \"prompts\": [\n";
  for (size_t i = 0; i < record.cases.size(); ++i) text += (i > 0 ? ",\n" : "") + case_text(record.cases[i]);
  return text + "\n ]\n}\n";
}

Record parse_record(std::string_view json, const std::string& source) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::parse_error& e) {
    throw Error(source + ": not valid JSON (byte " + std::to_string(e.byte) +
                "); give a file written by `strata gate --save`");
  }
  Reader r(doc, "", source);
  if (r.string("format") != kFormatName) r.fail("'format' is not \"" + std::string(kFormatName) + "\"");
  const uint64_t version = r.unsigned_int("format_version");
  if (version != static_cast<uint64_t>(kFormatVersion)) {
    throw Error(source + ": format_version " + std::to_string(version) + "; this strata reads version " +
                std::to_string(kFormatVersion) + ": save the reference again with this strata (--save)");
  }
  Record rec;
  rec.strata_version = r.string("strata_version");
  const uint64_t n_predict = r.unsigned_int("n_predict");
  if (n_predict == 0 || n_predict > (1U << 20)) r.fail("'n_predict' is " + std::to_string(n_predict) + ", not in 1..1048576");
  rec.n_predict = static_cast<int>(n_predict);
  rec.model = read_identity(r.at("model", &Json::is_object, "an object"), source);
  rec.backend = r.string("backend");
  rec.backend_detail = r.string("backend_detail");
  rec.launch_file = r.string("launch_file");
  rec.launch_json = r.at("launch", &Json::is_object, "an object").dump();
  const Json& prompts = r.at("prompts", &Json::is_array, "an array");
  if (prompts.empty()) r.fail("'prompts' is empty");
  std::set<std::string> names;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Case c = read_case(prompts[i], "prompts[" + std::to_string(i) + "]", rec.model.n_vocab, n_predict, source);
    if (!names.insert(c.name).second) r.fail("prompts[" + std::to_string(i) + "]: the name '" + c.name + "' is used twice");
    rec.cases.push_back(std::move(c));
  }
  r.done();
  return rec;
}

Record read_record(const std::string& path) { return parse_record(read_text_file(path, "the saved gate file"), path); }

void write_record(const Record& record, const std::string& path) {
  const std::string text = to_json(record);
  // Written next to the target and renamed over it, so that a failed save never leaves half a reference.
  const std::string tmp = path + ".tmp";
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write '" + path + "': " + (errno != 0 ? std::strerror(errno) : "cannot create it"));
    out << text;
    out.flush();
    if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    std::filesystem::remove(tmp, ec);
    throw Error("cannot write '" + path + "': " + reason);
  }
}

}  // namespace strata::gate
