#include <stdexcept>

#include "assign.hpp"
#include "sources.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"

extern char** environ;

namespace strata::config {
namespace {

Builder build(const std::filesystem::path& file, const Environment& env, const Overrides& overrides) {
  Builder builder;
  builder.launch = defaults();
  if (!file.empty()) {
    builder.launch.file = file.string();
    apply_file(builder, file);
  }
  apply_environment(builder, env);
  apply_overrides(builder, overrides);
  check_conflicts(builder);
  check_files(builder);
  return builder;
}

}  // namespace

Launch defaults() {
  Launch launch;
  for (const Key& key : schema()) {
    if (key.path.find('*') != std::string_view::npos || key.type == Type::Section ||
        key.type == Type::PluginTable)
      continue;
    if (!key.default_text.empty()) {
      const std::string problem = store_text(launch, key, key.default_text, {});
      if (!problem.empty())
        throw std::logic_error("config schema: default of " + std::string(key.path) + ": " + problem);
    }
    launch.provenance[std::string(key.path)] = Provenance{};
  }
  return launch;
}

std::vector<Diagnostic> check_file(const std::filesystem::path& file, const Environment& env,
                                   const Overrides& overrides) {
  return build(file, env, overrides).diagnostics();
}

Launch load(const std::filesystem::path& file, const Environment& env, const Overrides& overrides) {
  Builder builder = build(file, env, overrides);
  std::string errors;
  for (const Diagnostic& d : builder.diagnostics()) {
    if (d.severity == Diagnostic::Severity::Warning) {
      log::warn(d.origin + ": " + d.message);
      continue;
    }
    errors += (errors.empty() ? "" : "\n") + d.text();
  }
  if (!errors.empty()) throw Error(errors);
  return std::move(builder.launch);
}

Environment process_environment() {
  Environment env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.rfind("STRATA_", 0) != 0) continue;
    const size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

const PluginEntry* Launch::plugin(std::string_view name) const {
  for (const PluginEntry& p : plugins)
    if (p.name == name) return &p;
  return nullptr;
}

Provenance Launch::from(std::string_view key) const {
  auto it = provenance.find(std::string(key));
  return it == provenance.end() ? Provenance{} : it->second;
}

std::vector<std::string> PluginEntry::flattened() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : options) out.push_back(key + "=" + value);
  return out;
}

std::string Provenance::text() const {
  switch (kind) {
    case Kind::Default: return "default";
    case Kind::File: return line > 0 ? file + ":" + std::to_string(line) : file;
    case Kind::Environment: return "environment " + variable;
    case Kind::Override: return "-o";
  }
  return "default";
}

std::string Diagnostic::text() const {
  return origin + (severity == Severity::Warning ? ": warning: " : ": ") + message;
}

}  // namespace strata::config
