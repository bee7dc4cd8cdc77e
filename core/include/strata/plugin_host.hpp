// The plugin host: finds plugin libraries, examines each, keeps one registry of what it found, and loads the ones
// a launch needs. Core's side of plugin_api.h: statuses become strata::Error here, at the edge.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/plugin_api.h"

namespace strata {

// The host API table handed to every plugin's init.
const strata_host_api* host_api();

// Turns a plugin's status into an exception (and frees it); a NULL status is success.
// `what` says which call failed ("init", "device_info"); the message names the plugin.
void throw_if_error(strata_status* status, const std::string& plugin, const std::string& what);
const char* status_code_name(strata_status_code code);
// The code and message of a status (for tests and for callers that handle a status themselves); frees it.
std::pair<strata_status_code, std::string> take_status(strata_status* status);

// Where plugins are looked for, in order. The first folder that holds a plugin of a given name wins.
struct PluginSearchPath {
  std::vector<std::filesystem::path> folders;       // in examination order
  std::vector<std::string> origins;                 // why each folder is there ("config plugin_path", ...)
};

// The discovery order: the launch's plugin_path folders, the build's plugin folder, the executable's folder,
// then STRATA_PLUGIN_PATH (colon-separated). Folders that do not exist are kept (and reported as missing).
PluginSearchPath default_search_path(const std::vector<std::filesystem::path>& config_folders,
                                     const std::string& env_plugin_path);

struct DeviceSummary {
  std::string name, arch;
  strata_device_kind kind = STRATA_DEVICE_CPU;
  uint64_t memory_total = 0, memory_free = 0;
  uint32_t compute_units = 0;
};

// What examining one file found.
struct PluginCandidate {
  enum class Verdict {
    Usable,      // the ABI matches and the score is > 0
    Unusable,    // the plugin works but scores 0 on this machine (no AVX2, no GPU): not an error
    Rejected,    // could not be used at all: cannot open, no entry symbol, wrong ABI major, a throw, a failed init
    Shadowed,    // a plugin of the same name was found earlier in the search path
  };
  std::filesystem::path file;
  std::string folder_origin;
  Verdict verdict = Verdict::Rejected;
  std::string reason;              // why it was rejected, unusable or shadowed; the score reason when usable
  // From the descriptor (empty when it could not be read):
  std::string name, version, families;
  strata_plugin_kind kind = STRATA_KIND_FEATURE;
  uint32_t abi_major = 0, abi_minor = 0, score = 0;
  // The options a launch must give it, "KEY=WHAT" each (descriptor 1.1); empty when init needs none.
  std::vector<std::string> required_options;
};

const char* verdict_name(PluginCandidate::Verdict v);
const char* kind_name(strata_plugin_kind k);

class LoadedLibrary;

// A plugin that was initialised: its instance and the library that made it, kept together.
class PluginInstance {
 public:
  ~PluginInstance();
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;

  const std::string& name() const { return name_; }
  // The family's table at `version`, or nullptr when the plugin does not provide it. Tables shorter than
  // `min_size` (an older plugin built before members the host needs) are treated as absent.
  const void* interface(const char* family, uint32_t version, size_t min_size) const;
  template <class Table>
  const Table* get(const char* family, uint32_t version) const {
    return static_cast<const Table*>(interface(family, version, sizeof(strata_interface_header)));
  }
  void* ctx() const { return instance_.ctx; }

  // Devices of a backend plugin (empty for features). Throws strata::Error if the plugin fails.
  std::vector<DeviceSummary> devices() const;

 private:
  friend class PluginRegistry;
  PluginInstance(std::string name, std::shared_ptr<LoadedLibrary> lib, strata_plugin_instance inst);
  std::string name_;
  std::shared_ptr<LoadedLibrary> lib_;  // outlives the instance: destroyed after it
  strata_plugin_instance instance_{};
};

class PluginRegistry {
 public:
  // Examines every *.so in each folder of the search path, logging each candidate with its verdict.
  explicit PluginRegistry(const PluginSearchPath& path);
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  const PluginSearchPath& search_path() const { return path_; }
  const std::vector<PluginCandidate>& candidates() const { return candidates_; }

  // The candidate that owns `name` (the first found), or nullptr.
  const PluginCandidate* find(const std::string& name) const;
  // The names of every plugin found (for suggestions).
  std::vector<std::string> names() const;

  // Initialises plugin `name` with its options ("key=value"). Throws strata::Error naming the file and the reason
  // when the plugin is missing, rejected, unusable here, or its init fails. `name` stays loaded for the
  // registry's lifetime; init is called once per call.
  std::unique_ptr<PluginInstance> instantiate(const std::string& name,
                                              const std::vector<std::string>& options = {}) const;

  // The usable backend with the best score among `allowed` (all backends when empty); throws when none is.
  std::string best_backend(const std::vector<std::string>& allowed = {}) const;

 private:
  void examine(const std::filesystem::path& file, const std::string& origin);
  PluginSearchPath path_;
  std::vector<PluginCandidate> candidates_;
  std::vector<std::shared_ptr<LoadedLibrary>> libraries_;  // parallel to candidates_ (null when not opened)
};

}  // namespace strata
