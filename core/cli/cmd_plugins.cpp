// `strata plugins`: every plugin file examined, in search order, with its version, kind, score, devices and
// verdict or reason. Usable plugins are initialised (with the launch's options, if a launch is given) so that
// their devices can be listed; a failing init is shown as that plugin's verdict. A plugin whose descriptor names
// options a launch must give (peerlink: file, role) is not initialised when the launch gives it none: it is usable,
// and the listing says what a launch gives it (an init with nothing would only fail for want of them). Always exits
// 0 once the search ran: an unusable plugin is information, not an error.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "args.hpp"
#include "commands.hpp"
#include "launch_options.hpp"
#include "strata/plugin_host.hpp"

namespace strata::cli {
namespace {

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  }
  return buf;
}

struct Row {
  const PluginCandidate* c;
  std::vector<DeviceSummary> devices;
  std::string verdict, reason;
  bool initialised = false;
  bool waits_for_launch = false;  // usable, needs options and the launch gives it none
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

int cmd_plugins(const Args& args) {
  ArgParser p("strata plugins", "[--config FILE] [-o KEY=VALUE]... [--plugin-path DIR]... [--json]",
              "Lists every plugin file examined, whether or not a launch enables it: name, version, kind, score,\n"
              "devices, and its verdict (usable, unusable here, rejected, shadowed) with the reason.");
  LaunchOptions lo;
  lo.declare(p);
  std::vector<std::string> extra_folders;
  bool json = false;
  p.repeated("--plugin-path", "DIR", "examine this folder first", &extra_folders);
  p.flag("--json", "print JSON instead of a table", &json);
  if (!p.parse(args)) return 0;

  LaunchContext launch = lo.resolve(/*require_file=*/false);
  std::vector<std::filesystem::path> folders(extra_folders.begin(), extra_folders.end());
  for (const auto& f : launch.plugin_folders) folders.push_back(f);
  const char* env = std::getenv("STRATA_PLUGIN_PATH");
  PluginRegistry registry(default_search_path(folders, env != nullptr ? env : ""));

  std::vector<Row> rows;
  for (const auto& c : registry.candidates()) {
    Row r{&c, {}, verdict_name(c.verdict), c.reason, false, false};
    const bool usable = c.verdict == PluginCandidate::Verdict::Usable;
    const std::vector<std::string> options = usable ? launch.plugin_options(c.name) : std::vector<std::string>{};
    // Given nothing by the launch, a plugin that needs options would fail its init for want of them alone: it is
    // listed with what a launch gives it instead.
    r.waits_for_launch = usable && options.empty() && !c.required_options.empty();
    if (usable && !r.waits_for_launch) {
      try {
        auto inst = registry.instantiate(c.name, options);
        r.devices = inst->devices();
        r.initialised = true;
      } catch (const Error& e) {
        r.verdict = "init failed";
        r.reason = e.what();
      }
    }
    rows.push_back(std::move(r));
  }

  if (json) {
    nlohmann::json out;
    out["search_path"] = nlohmann::json::array();
    for (size_t i = 0; i < registry.search_path().folders.size(); ++i) {
      out["search_path"].push_back({{"folder", registry.search_path().folders[i].string()},
                                    {"origin", registry.search_path().origins[i]},
                                    {"exists", std::filesystem::is_directory(registry.search_path().folders[i])}});
    }
    out["plugins"] = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"file", r.c->file.string()}, {"name", r.c->name},      {"version", r.c->version},
                          {"kind", kind_name(r.c->kind)}, {"families", r.c->families}, {"score", r.c->score},
                          {"abi", std::to_string(r.c->abi_major) + "." + std::to_string(r.c->abi_minor)},
                          {"verdict", r.verdict},       {"reason", r.reason},
                          {"required_options", r.c->required_options}, {"initialised", r.initialised}};
      j["devices"] = nlohmann::json::array();
      for (const auto& d : r.devices) {
        j["devices"].push_back({{"name", d.name}, {"arch", d.arch}, {"kind", d.kind == STRATA_DEVICE_GPU ? "gpu" : "cpu"},
                                {"memory_total", d.memory_total}, {"memory_free", d.memory_free},
                                {"compute_units", d.compute_units}});
      }
      out["plugins"].push_back(std::move(j));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  std::printf("plugin search path (first folder wins for a name):\n");
  for (size_t i = 0; i < registry.search_path().folders.size(); ++i) {
    const auto& f = registry.search_path().folders[i];
    std::printf("  %zu. %s  (%s%s)\n", i + 1, f.c_str(), registry.search_path().origins[i].c_str(),
                std::filesystem::is_directory(f) ? "" : ", not there");
  }
  if (rows.empty()) {
    std::printf("\nno plugin files (*.so) found: build the project, or add a folder with --plugin-path,\n"
                "plugin_path in the launch, or STRATA_PLUGIN_PATH\n");
    return 0;
  }
  std::printf("\n%-14s %-8s %-8s %-6s %-14s %s\n", "NAME", "VERSION", "KIND", "SCORE", "VERDICT", "FILE");
  for (const auto& r : rows) {
    std::printf("%-14s %-8s %-8s %-6u %-14s %s\n", r.c->name.empty() ? "-" : r.c->name.c_str(),
                r.c->version.empty() ? "-" : r.c->version.c_str(), r.c->name.empty() ? "-" : kind_name(r.c->kind),
                r.c->score, r.verdict.c_str(), r.c->file.c_str());
    if (!r.reason.empty()) std::printf("    %s\n", r.reason.c_str());
    if (r.waits_for_launch) {
      std::printf("    a launch gives it %s (plugins.%s); not initialised without them\n",
                  joined(r.c->required_options).c_str(), r.c->name.c_str());
    }
    for (size_t i = 0; i < r.devices.size(); ++i) {
      const auto& d = r.devices[i];
      std::printf("    device %zu: %s [%s] %s, %u compute units, %s total, %s free\n", i,
                  d.kind == STRATA_DEVICE_GPU ? "gpu" : "cpu", d.arch.c_str(), d.name.c_str(), d.compute_units,
                  human_bytes(d.memory_total).c_str(), human_bytes(d.memory_free).c_str());
    }
  }
  return 0;
}

}  // namespace strata::cli
