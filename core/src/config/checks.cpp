#include <system_error>

#include "sources.hpp"

namespace strata::config {
namespace {

Where origin_or_default(const Builder& builder, const std::string& key) {
  if (const Where* w = builder.origin_of(key)) return *w;
  Where fallback;
  fallback.origin = "default";
  return fallback;
}

enum class Expect { File, Folder };

// "" when `path` is what is expected, else what is wrong.
std::string path_problem(const std::string& path, Expect expect) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return (expect == Expect::File ? "file not found: " : "folder not found: ") + path;
  const bool folder = std::filesystem::is_directory(st);
  if (expect == Expect::File && folder) return path + " is a folder, expected a file";
  if (expect == Expect::Folder && !folder) return path + " is a file, expected a folder";
  return {};
}

// speculative.*: a model draft names its file; verify windows decode one sequence (runtime.slots 1).
void check_speculative(Builder& builder) {
  const Launch& launch = builder.launch;
  const SpeculativeConfig& sp = launch.speculative;
  if (sp.draft == DraftKind::Model && !sp.model) {
    builder.error(Diagnostic::Kind::Conflict, origin_or_default(builder, "speculative.draft"),
                  "speculative.draft: model needs speculative.model: FILE (a small GGUF with the model's vocabulary)");
  }
  if (sp.draft != DraftKind::Off && launch.runtime.slots > 1) {
    builder.error(Diagnostic::Kind::Conflict, origin_or_default(builder, "speculative.draft"),
                  "speculative.draft: verify windows decode one sequence at a time, and runtime.slots is " +
                      std::to_string(launch.runtime.slots) + " (" + origin_or_default(builder, "runtime.slots").origin +
                      "): set runtime.slots: 1 or speculative.draft: off");
  }
}

}  // namespace

void check_conflicts(Builder& builder) {
  const Launch& launch = builder.launch;
  check_speculative(builder);
  if (launch.backend == "auto") return;
  const PluginEntry* chosen = launch.plugin(launch.backend);
  if (chosen == nullptr || chosen->enabled) return;
  const std::string switch_key = "plugins." + chosen->name + ".enabled";
  builder.error(Diagnostic::Kind::Conflict, origin_or_default(builder, "backend"),
                "backend: '" + launch.backend + "' is disabled by " + switch_key + " (" +
                    origin_or_default(builder, switch_key).origin + "): enable it or choose another backend");
}

void check_files(Builder& builder) {
  const Launch& launch = builder.launch;
  if (launch.model) {
    if (std::string p = path_problem(*launch.model, Expect::File); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "model"), "model: " + p);
  }
  if (launch.mmproj) {
    if (std::string p = path_problem(*launch.mmproj, Expect::File); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "mmproj"), "mmproj: " + p);
  }
  if (launch.speculative.model && launch.speculative.draft == DraftKind::Model) {
    if (std::string p = path_problem(*launch.speculative.model, Expect::File); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "speculative.model"),
                    "speculative.model: " + p);
  }
  if (launch.experts.arena) {
    const std::string folder = std::filesystem::path(*launch.experts.arena).parent_path().string();
    if (std::string p = path_problem(folder, Expect::Folder); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "experts.arena"),
                    "experts.arena: " + p + " (the arena file is made in that folder; /dev/shm is tmpfs on Linux)");
  }
  if (launch.experts.record) {
    const std::string folder = std::filesystem::path(*launch.experts.record).parent_path().string();
    if (std::string p = path_problem(folder, Expect::Folder); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "experts.record"),
                    "experts.record: " + p + " (the profile is written in that folder)");
  }
  if (launch.experts.profile && *launch.experts.profile != "auto") {
    if (std::string p = path_problem(*launch.experts.profile, Expect::File); !p.empty())
      builder.error(Diagnostic::Kind::MissingFile, origin_or_default(builder, "experts.profile"),
                    "experts.profile: " + p);
  }
  const std::vector<Where>* elements = nullptr;
  if (auto it = builder.element_origins.find("plugin_path"); it != builder.element_origins.end())
    elements = &it->second;
  for (size_t i = 0; i < launch.plugin_path.size(); ++i) {
    if (std::string p = path_problem(launch.plugin_path[i], Expect::Folder); !p.empty()) {
      const Where at = elements && i < elements->size() ? (*elements)[i] : origin_or_default(builder, "plugin_path");
      builder.error(Diagnostic::Kind::MissingFile, at, "plugin_path: " + p);
    }
  }
}

}  // namespace strata::config
