// `strata config check FILE`: every problem of a launch, as FILE:LINE:COLUMN: message (schema errors before
// missing files), plus warnings for plugin sections that name no plugin found. Exit 0 when clean, 2 otherwise.
// `strata config show [FILE]`: the effective launch with the origin of each value. `strata config reference`:
// the reference of every key, as markdown (the README's table is this output).
#include <cstdio>
#include <cstdlib>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "strata/plugin_host.hpp"
#include "strata/suggest.hpp"

namespace strata::cli {
namespace {

int config_check(const Args& args) {
  ArgParser p("strata config check", "FILE [-o KEY=VALUE]...",
              "Checks a launch and reports every error, not only the first, as FILE:LINE:COLUMN: message.");
  std::string file;
  std::vector<std::string> overrides;
  p.positional("FILE", "the YAML launch", &file);
  p.repeated("-o|--override", "KEY=VALUE", "check with this key set", &overrides);
  if (!p.parse(args)) return 0;

  const auto diags = config::check_file(file, config::process_environment(), overrides);
  int errors = 0;
  for (const auto& d : diags) {
    std::fprintf(stderr, "%s\n", d.text().c_str());
    if (d.severity == config::Diagnostic::Severity::Error) ++errors;
  }
  if (errors > 0) {
    std::fprintf(stderr, "%s: %d error%s\n", file.c_str(), errors, errors == 1 ? "" : "s");
    return 2;
  }
  // The plugin sections must name plugins that exist (a warning: a GPU plugin may be absent on this machine).
  const config::Launch launch = config::load(file, config::process_environment(), overrides);
  std::vector<std::filesystem::path> folders(launch.plugin_path.begin(), launch.plugin_path.end());
  const char* env = std::getenv("STRATA_PLUGIN_PATH");
  PluginRegistry registry(default_search_path(folders, env != nullptr ? env : ""));
  for (const auto& entry : launch.plugins) {
    if (registry.find(entry.name) != nullptr) continue;
    std::fprintf(stderr, "%s: warning: plugins.%s: no plugin of this name was found%s (`strata plugins` lists them)\n",
                 launch.from("plugins." + entry.name + ".enabled").text().c_str(), entry.name.c_str(),
                 did_you_mean(entry.name, registry.names()).c_str());
  }
  std::printf("%s: ok\n", file.c_str());
  return 0;
}

int config_show(const Args& args) {
  ArgParser p("strata config show", "[FILE] [-o KEY=VALUE]... [--json]",
              "Prints the effective launch (defaults < FILE < STRATA_* environment < -o), each value with where\n"
              "it came from.");
  std::string file;
  std::vector<std::string> overrides;
  bool json = false;
  p.positional("FILE", "the YAML launch (optional: defaults alone without it)", &file, false);
  p.repeated("-o|--override", "KEY=VALUE", "set a key", &overrides);
  p.flag("--json", "print JSON", &json);
  if (!p.parse(args)) return 0;
  const config::Launch launch = config::load(file, config::process_environment(), overrides);
  const std::string out = json ? config::render_json(launch) : config::render_yaml(launch);
  std::fputs(out.c_str(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

int config_reference(const Args& args) {
  ArgParser p("strata config reference", "", "Prints every launch key with its type, default and meaning (markdown).");
  if (!p.parse(args)) return 0;
  std::fputs(config::reference_markdown().c_str(), stdout);
  return 0;
}

}  // namespace

const std::vector<std::string>& config_subcommands() {
  static const std::vector<std::string> subs = {"check", "show", "reference"};
  return subs;
}

int cmd_config(const Args& args) {
  const std::vector<std::string>& subs = config_subcommands();
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::printf("usage: strata config check FILE | show [FILE] | reference\n\n"
                "  check      report every error of a launch (FILE:LINE:COLUMN: message)\n"
                "  show       print the effective launch with the origin of each value\n"
                "  reference  print every launch key (markdown)\n");
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "check") return config_check(rest);
  if (args[0] == "show") return config_show(rest);
  if (args[0] == "reference") return config_reference(rest);
  throw UsageError("unknown subcommand 'config " + args[0] + "'" + did_you_mean(args[0], subs) +
                   "; use check, show or reference");
}

}  // namespace strata::cli
