#include "assign.hpp"

#include <functional>
#include <map>
#include <stdexcept>

#include "scalars.hpp"
#include "strata/suggest.hpp"

namespace strata::config {
namespace {

using PairVisitor = std::function<void(const std::string& key, const YAML::Mark& key_mark, const YAML::Node& value)>;

bool is_null(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

std::string node_kind(const YAML::Node& node) {
  if (is_null(node)) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

std::string in_quotes(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string list_text(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

bool valid_plugin_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

// The key nodes of a map, checked once: keys are plain scalars and appear once.
void for_each_pair(Builder& builder, const Source& source, const std::string& prefix, const YAML::Node& map,
                   const PairVisitor& visit) {
  std::map<std::string, YAML::Mark> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: `it->` hands out a temporary
    const YAML::Mark mark = key.Mark();
    if (!key.IsScalar()) {
      builder.error(Diagnostic::Kind::Schema, where(source, mark),
                    (prefix.empty() ? std::string() : prefix + ": ") + "a key must be a plain word, not " +
                        node_kind(key));
      continue;
    }
    const std::string name = key.Scalar();
    const std::string dotted = prefix.empty() ? name : prefix + "." + name;
    auto [first, inserted] = seen.emplace(name, mark);
    if (!inserted) {
      const std::string earlier = first->second.is_null() || source.kind != Source::Kind::File
                                      ? std::string("earlier")
                                      : "at line " + std::to_string(first->second.line + 1);
      builder.error(Diagnostic::Kind::Schema, where(source, mark),
                    "duplicate key " + in_quotes(dotted) + " (first given " + earlier + "); keep one");
      continue;
    }
    visit(name, mark, it->second);
  }
}

[[noreturn]] void field_mismatch(const Key& key) {
  throw std::logic_error("config schema: the field of '" + std::string(key.path) + "' does not fit its type");
}

void put_string(const Key& key, Field f, std::string value) {
  if (auto* p = std::get_if<std::string*>(&f)) **p = std::move(value);
  else if (auto* q = std::get_if<std::optional<std::string>*>(&f)) **q = std::move(value);
  else field_mismatch(key);
}

void put_int(const Key& key, Field f, int64_t value) {
  if (auto* p = std::get_if<int*>(&f)) **p = static_cast<int>(value);  // the schema's range keeps it in int
  else if (auto* q = std::get_if<int64_t*>(&f)) **q = value;
  else field_mismatch(key);
}

void put_float(const Key& key, Field f, std::optional<double> value) {
  if (auto* p = std::get_if<double*>(&f); p && value) **p = *value;
  else if (auto* q = std::get_if<std::optional<double>*>(&f)) **q = value;
  else field_mismatch(key);
}

void put_enum(const Key& key, Field f, size_t index) {
  if (auto* p = std::get_if<CachePolicy*>(&f)) **p = static_cast<CachePolicy>(index);
  else if (auto* q = std::get_if<KvType*>(&f)) **q = static_cast<KvType>(index);
  else if (auto* d = std::get_if<DraftKind*>(&f)) **d = static_cast<DraftKind>(index);
  else if (auto* h = std::get_if<HostCopy*>(&f)) **h = static_cast<HostCopy>(index);
  else field_mismatch(key);
}

template <typename T>
void put(const Key& key, Field f, T value) {
  if (auto* p = std::get_if<T*>(&f)) **p = value;
  else field_mismatch(key);
}

void clear(const Key& key, Field f) {
  if (auto* p = std::get_if<std::optional<std::string>*>(&f)) (*p)->reset();
  else if (auto* q = std::get_if<std::optional<double>*>(&f)) (*q)->reset();
  else field_mismatch(key);
}

std::string resolve_path(std::string_view text, const std::filesystem::path& base) {
  std::filesystem::path p(text);
  if (p.is_relative()) p = base / p;
  return p.lexically_normal().string();
}

std::string check_float(const Key& key, double v, std::string_view text) {
  const FloatRange& r = key.floats;
  if (v < r.lo || (r.lo_open && v == r.lo) || v > r.hi)
    return in_quotes(text) + " is out of range: must be " + range_text(key);
  return {};
}

// Plugin options: nested maps become `a.b`, lists are comma-joined. Core cannot check them: the plugin does.
void flatten_option(Builder& builder, const Source& source, const std::string& plugin, const std::string& option,
                    const YAML::Node& value, const YAML::Mark& key_mark) {
  const std::string dotted = "plugins." + plugin + "." + option;
  if (option.find('=') != std::string::npos) {
    builder.error(Diagnostic::Kind::Schema, where(source, key_mark),
                  in_quotes(dotted) + ": a plugin option's name cannot contain '='");
    return;
  }
  if (value.IsDefined() && value.IsMap()) {
    for_each_pair(builder, source, dotted, value,
                  [&](const std::string& sub, const YAML::Mark& sub_mark, const YAML::Node& sub_value) {
                    flatten_option(builder, source, plugin, option + "." + sub, sub_value, sub_mark);
                  });
    return;
  }
  std::string text;
  Where at = where(source, key_mark.is_null() ? value.Mark() : key_mark);
  if (value.IsDefined() && value.IsSequence()) {
    for (size_t i = 0; i < value.size(); ++i) {
      const YAML::Node item = value[i];
      if (!item.IsScalar() || item.Scalar().find(',') != std::string::npos) {
        builder.error(Diagnostic::Kind::Schema, where(source, item.Mark()),
                      dotted + ": a list in a plugin option may hold only plain values without commas, got " +
                          node_kind(item));
        return;
      }
      text += (i ? "," : "") + item.Scalar();
    }
  } else if (!is_null(value)) {
    text = value.Scalar();
    at = where(source, value.Mark());
  }
  PluginEntry& entry = builder.plugin(plugin);
  bool replaced = false;
  for (auto& [name, old] : entry.options)
    if (name == option) {
      old = text;
      replaced = true;
    }
  if (!replaced) entry.options.emplace_back(option, text);
  builder.set_origin(dotted, at);
}

void assign_leaf(Builder& builder, const Source& source, const Key& key, const std::string& dotted,
                 const YAML::Node& value, const YAML::Mark& key_mark) {
  const Where at_value = where(source, value.Mark());
  const Where at_key = key_mark.is_null() ? at_value : where(source, key_mark);
  if (is_null(value)) {
    if (!key.optional) {
      builder.error(Diagnostic::Kind::Schema, at_key, dotted + ": has no value: expected " + expected_text(key));
      return;
    }
    clear(key, key.field(builder.launch));
    builder.set_origin(dotted, at_key);
    return;
  }
  if (key.type == Type::PathList) {
    std::vector<std::string> paths;
    std::vector<Where> origins;
    auto add = [&](const YAML::Node& item) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        builder.error(Diagnostic::Kind::Schema, where(source, item.Mark()),
                      dotted + ": expected a path, got " + (item.IsScalar() ? "an empty string" : node_kind(item)));
        return false;
      }
      paths.push_back(resolve_path(item.Scalar(), source.base));
      origins.push_back(where(source, item.Mark()));
      return true;
    };
    if (value.IsSequence()) {
      for (size_t i = 0; i < value.size(); ++i)
        if (!add(value[i])) return;
    } else if (!add(value)) {
      return;
    }
    put(key, key.field(builder.launch), std::move(paths));
    builder.element_origins[dotted] = std::move(origins);
    builder.set_origin(dotted, at_value);
    return;
  }
  if (!value.IsScalar()) {
    builder.error(Diagnostic::Kind::Schema, at_value,
                  dotted + ": expected " + expected_text(key) + ", got " + node_kind(value));
    return;
  }
  const std::string problem = store_text(builder.launch, key, value.Scalar(), source.base);
  if (!problem.empty()) {
    builder.error(Diagnostic::Kind::Schema, at_value, dotted + ": " + problem);
    return;
  }
  builder.set_origin(dotted, at_value);
}

// A key the schema does not have: name the first unknown component and suggest the nearest known key.
void unknown_key(Builder& builder, const Where& at, const std::vector<std::string>& path) {
  size_t known = path.size() - 1;
  while (known > 0 && find_key({path.begin(), path.begin() + static_cast<std::ptrdiff_t>(known)}) == nullptr)
    --known;
  const std::vector<std::string> parent(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(known));
  const Key* section = parent.empty() ? nullptr : find_key(parent);
  const std::string parent_text = join_path(parent);
  if (section != nullptr && section->type != Type::Section) {
    builder.error(Diagnostic::Kind::Schema, at,
                  in_quotes(parent_text) + " is a single value, not a section: set it as " + parent_text + "=VALUE");
    return;
  }
  const std::string& word = path[known];
  std::vector<std::string> bad_path = parent;
  bad_path.push_back(word);
  std::string message = "unknown key " + in_quotes(join_path(bad_path));
  const std::vector<std::string> siblings = child_names(section ? section->path : std::string_view());
  if (std::optional<std::string> near = nearest(word, siblings)) {
    message += " (did you mean '" + (parent.empty() ? *near : parent_text + "." + *near) + "'?)";
  } else if (std::vector<std::string> elsewhere = keys_named(word); elsewhere.size() == 1) {
    message += " (did you mean '" + elsewhere.front() + "'?)";
  } else {
    message += parent.empty() ? "; the top-level keys are " + list_text(siblings)
                              : "; the keys of " + parent_text + " are " + list_text(siblings);
  }
  builder.error(Diagnostic::Kind::Schema, at, message);
}

}  // namespace

void assign_map(Builder& builder, const Source& source, const std::vector<std::string>& prefix,
                const YAML::Node& map) {
  for_each_pair(builder, source, join_path(prefix), map,
                [&](const std::string& name, const YAML::Mark& mark, const YAML::Node& value) {
                  std::vector<std::string> path = prefix;
                  path.push_back(name);
                  assign_key(builder, source, path, value, mark);
                });
}

void assign_key(Builder& builder, const Source& source, const std::vector<std::string>& path,
                const YAML::Node& value, const YAML::Mark& key_mark) {
  const std::string dotted = join_path(path);
  const Where at_key = where(source, key_mark.is_null() ? value.Mark() : key_mark);
  if (path.size() >= 2 && path[0] == "plugins" && !valid_plugin_name(path[1])) {
    builder.error(Diagnostic::Kind::Schema, at_key,
                  "plugins: " + in_quotes(path[1]) + " is not a plugin name (letters, digits, '_' and '-')");
    return;
  }
  // Plugin options may be addressed at any depth by -o (plugins.cuda.a.b=1): everything under a plugin's name
  // other than `enabled` belongs to the plugin.
  if (path.size() >= 3 && path[0] == "plugins" && !(path.size() == 3 && path[2] == "enabled")) {
    builder.plugin(path[1]);
    std::vector<std::string> option(path.begin() + 2, path.end());
    flatten_option(builder, source, path[1], join_path(option), value, key_mark);
    return;
  }
  const Key* key = find_key(path);
  if (key == nullptr) {
    unknown_key(builder, at_key, path);
    return;
  }
  switch (key->type) {
    case Type::Section:
    case Type::PluginTable:
    case Type::PluginSection:
      if (key->type == Type::PluginSection) builder.plugin(path[1]);
      if (is_null(value)) return;
      if (!value.IsMap()) {
        const std::string example = key->type == Type::PluginSection ? " (e.g. {enabled: false})" : "";
        builder.error(Diagnostic::Kind::Schema, where(source, value.Mark()),
                      dotted + ": expected a map of keys" + example + ", got " + node_kind(value));
        return;
      }
      assign_map(builder, source, path, value);
      return;
    case Type::PluginOption: return;  // handled above: options never reach the table lookup
    default: break;
  }
  if (key->type == Type::Bool && path[0] == "plugins") {
    const std::optional<bool> on = value.IsScalar() ? parse_bool(value.Scalar()) : std::nullopt;
    if (!on) {
      const Where at = is_null(value) ? at_key : where(source, value.Mark());
      builder.error(Diagnostic::Kind::Schema, at, dotted + ": expected true or false, got " + node_kind(value));
      return;
    }
    builder.plugin(path[1]).enabled = *on;
    builder.set_origin(dotted, where(source, value.Mark()));
    return;
  }
  assign_leaf(builder, source, *key, dotted, value, key_mark);
}

std::string store_text(Launch& launch, const Key& key, std::string_view text, const std::filesystem::path& base) {
  const Field field = key.field ? key.field(launch) : Field{};
  switch (key.type) {
    case Type::String:
      if (text.empty()) return "is empty (leave the key out to use the default)";
      put_string(key, field, std::string(text));
      return {};
    case Type::Path:
      if (text.empty()) return "is empty: expected a path";
      // experts.profile's one word: the profile stored beside the model.
      put_string(key, field, key.path == "experts.profile" && text == "auto" ? std::string(text) : resolve_path(text, base));
      return {};
    case Type::PathList:
      if (text.empty()) return "is empty: expected a path";
      put(key, field, std::vector<std::string>{resolve_path(text, base)});
      return {};
    case Type::Bool: {
      const std::optional<bool> b = parse_bool(text);
      if (!b) return "expected true or false, got " + in_quotes(text);
      put(key, field, *b);
      return {};
    }
    case Type::Int: {
      const Parsed<int64_t> v = parse_int(text);
      if (!v.value) return v.error;
      if (*v.value < key.ints.lo || *v.value > key.ints.hi)
        return std::to_string(*v.value) + " is out of range: must be " + range_text(key);
      put_int(key, field, *v.value);
      return {};
    }
    case Type::Float: {
      const Parsed<double> v = parse_float(text);
      if (!v.value) return v.error;
      if (std::string range = check_float(key, *v.value, text); !range.empty()) return range;
      put_float(key, field, *v.value);
      return {};
    }
    case Type::FloatOrAuto: {
      if (text == "auto") {
        put_float(key, field, std::nullopt);
        return {};
      }
      const Parsed<double> v = parse_float(text);
      if (!v.value) return "expected auto or a number, got " + in_quotes(text);
      if (std::string range = check_float(key, *v.value, text); !range.empty()) return range;
      put_float(key, field, *v.value);
      return {};
    }
    case Type::Enum: {
      std::vector<std::string> names(key.choices.begin(), key.choices.end());
      for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == text) {
          put_enum(key, field, i);
          return {};
        }
      return in_quotes(text) + " is not one of: " + list_text(names) + did_you_mean(text, names);
    }
    case Type::ByteSize: {
      const Parsed<uint64_t> v = parse_size(text);
      if (!v.value) return v.error;
      put(key, field, *v.value);
      return {};
    }
    case Type::CacheSize: {
      const Parsed<CacheSize> v = parse_cache_size(text);
      if (!v.value) return v.error;
      put(key, field, *v.value);
      return {};
    }
    case Type::Section:
    case Type::PluginTable:
    case Type::PluginSection:
    case Type::PluginOption: break;
  }
  field_mismatch(key);
}

}  // namespace strata::config
