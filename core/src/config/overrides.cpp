#include <system_error>

#include <yaml-cpp/yaml.h>

#include "assign.hpp"
#include "sources.hpp"
#include "strata/suggest.hpp"

namespace strata::config {
namespace {

std::filesystem::path working_directory() {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? std::filesystem::path() : cwd;
}

// An environment value is taken as it is (no YAML parsing); a list of paths is ':'-separated like PATH.
YAML::Node environment_value(const Key* key, const std::string& text) {
  if (key == nullptr || key->type != Type::PathList) return YAML::Node(text);
  YAML::Node list(YAML::NodeType::Sequence);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t colon = text.find(':', start);
    const std::string item = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!item.empty()) list.push_back(item);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return list;
}

}  // namespace

const std::vector<EnvSwitch>& environment_switches() {
  // The seeds' switches and the commonest run-time knobs. Each key must exist in the schema (a test checks).
  static const std::vector<EnvSwitch> table = {
      {"STRATA_MODEL", "model"},
      {"STRATA_BACKEND", "backend"},
      {"STRATA_PLUGIN_PATH", "plugin_path"},
      {"STRATA_PCIE_BALANCE", "plugins.pcie_balance.enabled"},
      {"STRATA_PEER_HOT", "experts.peer_hot"},
      {"STRATA_FORCE_AVX2", "plugins.cpu_avx2.force_avx2"},
      {"STRATA_CONTEXT", "runtime.context"},
      {"STRATA_THREADS", "runtime.threads"},
  };
  return table;
}

void apply_environment(Builder& builder, const Environment& env) {
  const std::vector<EnvSwitch>& switches = environment_switches();
  std::vector<std::string> names;
  for (size_t i = 0; i < switches.size(); ++i) {
    names.push_back(switches[i].variable);
    auto it = env.find(switches[i].variable);
    if (it == env.end() || it->second.empty()) continue;  // empty means unset, as in most shells' habits
    const Source source{Source::Kind::Environment, switches[i].variable, working_directory(), i};
    const std::vector<std::string> path = split_path(switches[i].key);
    assign_key(builder, source, path, environment_value(find_key(path), it->second), YAML::Mark::null_mark());
  }
  // Other STRATA_* variables belong to other parts (STRATA_LOG); only one that looks like a misspelt switch is
  // worth a word, since it would otherwise be ignored in silence.
  size_t order = switches.size();
  for (const auto& [name, value] : env) {
    if (name.rfind("STRATA_", 0) != 0) continue;
    bool known = false;
    for (const std::string& n : names) known = known || n == name;
    if (known) continue;
    if (std::optional<std::string> near = nearest(name, names)) {
      const Source source{Source::Kind::Environment, name, {}, order++};
      builder.warning(where(source), "not a launch switch, ignored (did you mean '" + *near + "'?)");
    }
  }
}

void apply_overrides(Builder& builder, const Overrides& overrides) {
  const std::filesystem::path cwd = working_directory();
  for (size_t i = 0; i < overrides.size(); ++i) {
    const std::string& text = overrides[i];
    const Source source{Source::Kind::Override, text, cwd, i};
    const size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      builder.error(Diagnostic::Kind::Syntax, where(source),
                    "expected KEY=VALUE, e.g. -o runtime.context=8192 or -o plugins.cuda.enabled=false");
      continue;
    }
    const std::string key_text = text.substr(0, eq);
    const std::vector<std::string> path = split_path(key_text);
    bool empty_component = false;
    for (const std::string& c : path) empty_component = empty_component || c.empty();
    if (empty_component) {
      builder.error(Diagnostic::Kind::Syntax, where(source),
                    "'" + key_text + "' is not a key path: write the keys joined by single dots, e.g. experts.cache");
      continue;
    }
    YAML::Node value;
    try {
      value = YAML::Load(text.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      builder.error(Diagnostic::Kind::Syntax, where(source),
                    key_text + ": the value is not valid YAML (" + yaml_refusal(e) +
                        "): put quotes around a plain string");
      continue;
    }
    assign_key(builder, source, path, value, YAML::Mark::null_mark());
  }
}

}  // namespace strata::config
