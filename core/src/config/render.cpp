#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "scalars.hpp"
#include "schema.hpp"

namespace strata::config {
namespace {

using Json = nlohmann::ordered_json;

const char* const kRedacted = "<redacted>";

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// A YAML scalar that loads back to the same text: the emitter quotes where plain text would not survive, and
// null words are quoted so that they stay strings.
std::string yaml_scalar(const std::string& text) {
  YAML::Emitter out;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL")
    out << YAML::DoubleQuoted;
  out << text;
  return out.c_str();
}

std::string yaml_value(const Key& key, const Field& field) {
  return std::visit(
      Overloaded{
          [](std::monostate) { return std::string("~"); },
          [](const std::string* s) { return yaml_scalar(*s); },
          [&](const std::optional<std::string>* s) {
            if (!*s) return std::string("~");
            return key.secret ? yaml_scalar(kRedacted) : yaml_scalar(**s);
          },
          [](const std::vector<std::string>* list) {
            std::string s = "[";
            for (size_t i = 0; i < list->size(); ++i) s += (i ? ", " : "") + yaml_scalar((*list)[i]);
            return s + "]";
          },
          [](const bool* b) { return std::string(*b ? "true" : "false"); },
          [](const int* i) { return std::to_string(*i); },
          [](const int64_t* i) { return std::to_string(*i); },
          [](const double* d) { return format_float(*d); },
          [](const std::optional<double>* d) { return *d ? format_float(**d) : std::string("auto"); },
          [](const uint64_t* bytes) { return format_byte_size(*bytes); },
          [](const CacheSize* c) { return format_cache_size(*c); },
          [&](const CachePolicy* p) { return std::string(key.choices.at(static_cast<size_t>(*p))); },
          [&](const KvType* k) { return std::string(key.choices.at(static_cast<size_t>(*k))); },
          [&](const DraftKind* d) { return std::string(key.choices.at(static_cast<size_t>(*d))); },
          [&](const HostCopy* h) { return std::string(key.choices.at(static_cast<size_t>(*h))); },
      },
      field);
}

Json json_value(const Key& key, const Field& field) {
  return std::visit(
      Overloaded{
          [](std::monostate) { return Json(nullptr); },
          [](const std::string* s) { return Json(*s); },
          [&](const std::optional<std::string>* s) {
            if (!*s) return Json(nullptr);
            return key.secret ? Json(kRedacted) : Json(**s);
          },
          [](const std::vector<std::string>* list) { return Json(*list); },
          [](const bool* b) { return Json(*b); },
          [](const int* i) { return Json(*i); },
          [](const int64_t* i) { return Json(*i); },
          [](const double* d) { return Json(*d); },
          [](const std::optional<double>* d) { return *d ? Json(**d) : Json("auto"); },
          [](const uint64_t* bytes) { return Json(*bytes); },
          [](const CacheSize* c) {
            return c->kind == CacheSize::Kind::Bytes ? Json(c->bytes) : Json(format_cache_size(*c));
          },
          [&](const CachePolicy* p) { return Json(std::string(key.choices.at(static_cast<size_t>(*p)))); },
          [&](const KvType* k) { return Json(std::string(key.choices.at(static_cast<size_t>(*k)))); },
          [&](const DraftKind* d) { return Json(std::string(key.choices.at(static_cast<size_t>(*d)))); },
          [&](const HostCopy* h) { return Json(std::string(key.choices.at(static_cast<size_t>(*h)))); },
      },
      field);
}

struct Line {
  std::string text;
  std::string comment;  // "" = none
};

void add_plugins(const Launch& launch, int depth, std::vector<Line>& lines) {
  const std::string pad(static_cast<size_t>(depth) * 2, ' ');
  if (launch.plugins.empty()) {
    lines.push_back({pad + "plugins: {}", "none named: every plugin found is enabled with its defaults"});
    return;
  }
  lines.push_back({pad + "plugins:", ""});
  for (const PluginEntry& p : launch.plugins) {
    const std::string prefix = "plugins." + p.name + ".";
    lines.push_back({pad + "  " + yaml_scalar(p.name) + ":", ""});
    lines.push_back({pad + "    enabled: " + (p.enabled ? "true" : "false"), launch.from(prefix + "enabled").text()});
    for (const auto& [option, value] : p.options)
      lines.push_back({pad + "    " + yaml_scalar(option) + ": " + yaml_scalar(value), launch.from(prefix + option).text()});
  }
}

}  // namespace

std::string render_yaml(const Launch& launch) {
  Launch copy = launch;  // the schema's field accessors take a mutable launch
  std::vector<Line> lines;
  for (const Key& key : schema()) {
    if (key.path.find('*') != std::string_view::npos) continue;
    const std::vector<std::string> path = split_path(key.path);
    const int depth = static_cast<int>(path.size()) - 1;
    const std::string pad(static_cast<size_t>(depth) * 2, ' ');
    if (key.type == Type::PluginTable) {
      add_plugins(launch, depth, lines);
    } else if (key.type == Type::Section) {
      lines.push_back({pad + path.back() + ":", ""});
    } else {
      lines.push_back({pad + path.back() + ": " + yaml_value(key, key.field(copy)),
                       launch.from(key.path).text()});
    }
  }
  size_t width = 0;
  for (const Line& l : lines)
    if (!l.comment.empty()) width = std::max(width, l.text.size());
  width = std::min<size_t>(width, 56);
  std::string out = "# effective launch" + (launch.file.empty() ? std::string() : " from " + launch.file) +
                    "; each comment says where the value came from\n";
  for (const Line& l : lines) {
    out += l.text;
    if (!l.comment.empty()) out += std::string(l.text.size() < width ? width - l.text.size() : 0, ' ') + "  # " + l.comment;
    out += '\n';
  }
  return out;
}

std::string render_json(const Launch& launch) {
  Launch copy = launch;
  Json values = Json::object();
  for (const Key& key : schema()) {
    if (key.path.find('*') != std::string_view::npos || key.type == Type::Section) continue;
    const std::vector<std::string> path = split_path(key.path);
    Json* node = &values;
    for (size_t i = 0; i + 1 < path.size(); ++i) node = &(*node)[path[i]];
    if (key.type == Type::PluginTable) {
      Json plugins = Json::object();
      for (const PluginEntry& p : launch.plugins) {
        Json options = Json::object();
        for (const auto& [option, value] : p.options) options[option] = value;
        plugins[p.name] = Json{{"enabled", p.enabled}, {"options", options}};
      }
      (*node)[path.back()] = plugins;
    } else {
      (*node)[path.back()] = json_value(key, key.field(copy));
    }
  }
  Json provenance = Json::object();
  for (const auto& [key, from] : launch.provenance) provenance[key] = from.text();
  Json doc = Json::object();
  doc["file"] = launch.file.empty() ? Json(nullptr) : Json(launch.file);
  doc["launch"] = values;
  doc["provenance"] = provenance;
  return doc.dump(2) + "\n";
}

}  // namespace strata::config
