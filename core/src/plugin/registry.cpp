// Discovery and the registry: every *.so in each search folder is opened and its descriptor read; each gets a
// verdict. Nothing a plugin does here (a NULL descriptor, a wrong ABI, a throw) stops the host.
#include <algorithm>
#include <cstddef>
#include <exception>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "library.hpp"
#include "strata/error.hpp"
#include "strata/log.hpp"
#include "strata/plugin_host.hpp"
#include "strata/suggest.hpp"

namespace strata {
namespace {

// The descriptor's size in ABI 1.0: everything up to and including score_reason.
constexpr size_t kDescriptorV1_0 = offsetof(strata_plugin_descriptor, score_reason) + sizeof(const char*);
// And in ABI 1.1, which added required_options.
constexpr size_t kDescriptorV1_1 = offsetof(strata_plugin_descriptor, required_options) + sizeof(const char*);
constexpr size_t kInstanceV1_0 = offsetof(strata_plugin_instance, destroy) + sizeof(void*);

std::string str_or(const char* s, const char* fallback) { return s != nullptr ? std::string(s) : std::string(fallback); }

// "file=PATH, role=0|1" -> {"file=PATH", "role=0|1"}: comma-separated, blanks around each item dropped.
std::vector<std::string> split_required(const char* list) {
  std::vector<std::string> out;
  std::istringstream in(list != nullptr ? list : "");
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    out.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return out;
}

std::string exception_text(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

const char* verdict_name(PluginCandidate::Verdict v) {
  switch (v) {
    case PluginCandidate::Verdict::Usable: return "usable";
    case PluginCandidate::Verdict::Unusable: return "unusable here";
    case PluginCandidate::Verdict::Rejected: return "rejected";
    case PluginCandidate::Verdict::Shadowed: return "shadowed";
  }
  return "?";
}

const char* kind_name(strata_plugin_kind k) {
  switch (k) {
    case STRATA_KIND_BACKEND: return "backend";
    case STRATA_KIND_FEATURE: return "feature";
  }
  return "unknown";
}

PluginRegistry::PluginRegistry(const PluginSearchPath& path) : path_(path) {
  for (size_t i = 0; i < path_.folders.size(); ++i) {
    const auto& folder = path_.folders[i];
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
      log::debug("plugin folder " + folder.string() + " (" + path_.origins[i] + "): not there, skipped");
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      if (entry.path().extension() == ".so") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());  // a stable order, independent of the file system's
    for (const auto& f : files) examine(f, path_.origins[i]);
  }
}

PluginRegistry::~PluginRegistry() = default;

void PluginRegistry::examine(const std::filesystem::path& file, const std::string& origin) {
  PluginCandidate c;
  c.file = file;
  c.folder_origin = origin;
  std::shared_ptr<LoadedLibrary> lib;
  auto finish = [&]() {
    const std::string line = "plugin " + file.string() + ": " + verdict_name(c.verdict) +
                             (c.name.empty() ? "" : " '" + c.name + "'") + (c.reason.empty() ? "" : " (" + c.reason + ")");
    if (c.verdict == PluginCandidate::Verdict::Rejected) {
      log::warn(line);
    } else {
      log::info(line);
    }
    candidates_.push_back(std::move(c));
    libraries_.push_back(std::move(lib));
  };

  try {
    lib = std::make_shared<LoadedLibrary>(file);
  } catch (const Error& e) {
    c.reason = e.what();
    return finish();
  }
  if (lib->query() == nullptr) {
    c.reason = std::string("no entry symbol ") + STRATA_PLUGIN_QUERY_SYMBOL + ": not a Strata plugin";
    return finish();
  }
  if (lib->init() == nullptr) {
    c.reason = std::string("no entry symbol ") + STRATA_PLUGIN_INIT_SYMBOL + ": build it with STRATA_PLUGIN_DEFINE";
    return finish();
  }
  const strata_plugin_descriptor* d = nullptr;
  try {
    d = lib->query()();
  } catch (...) {
    c.reason = std::string(STRATA_PLUGIN_QUERY_SYMBOL) + " threw across the C boundary: " +
               exception_text(std::current_exception());
    return finish();
  }
  if (d == nullptr) {
    c.reason = std::string(STRATA_PLUGIN_QUERY_SYMBOL) + " returned no descriptor";
    return finish();
  }
  if (d->abi_major != STRATA_ABI_MAJOR) {
    c.abi_major = d->abi_major;
    c.abi_minor = d->abi_minor;
    c.reason = "built for plugin ABI " + std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor) +
               ", this host speaks " + std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR) +
               ": rebuild the plugin against this host's plugin_api.h";
    return finish();
  }
  if (d->struct_size < kDescriptorV1_0) {
    c.reason = "descriptor is " + std::to_string(d->struct_size) + " bytes, ABI 1.0 needs " +
               std::to_string(kDescriptorV1_0);
    return finish();
  }
  if (d->name == nullptr || d->name[0] == '\0') {
    c.reason = "descriptor has no name";
    return finish();
  }
  // Only the members of the host's minor are read; a newer plugin's extra members are ignored.
  c.abi_major = d->abi_major;
  c.abi_minor = d->abi_minor;
  c.name = d->name;
  c.version = str_or(d->version, "?");
  c.families = str_or(d->families, "");
  c.kind = d->kind == STRATA_KIND_BACKEND ? STRATA_KIND_BACKEND : STRATA_KIND_FEATURE;
  c.score = d->score;
  if (d->abi_minor >= 1 && d->struct_size >= kDescriptorV1_1) c.required_options = split_required(d->required_options);
  if (d->abi_minor > STRATA_ABI_MINOR) {
    log::debug("plugin " + file.string() + ": ABI minor " + std::to_string(d->abi_minor) +
               " is newer than the host's " + std::to_string(STRATA_ABI_MINOR) + "; newer members are ignored");
  }
  if (const PluginCandidate* earlier = find(c.name)) {
    c.verdict = PluginCandidate::Verdict::Shadowed;
    c.reason = "a plugin named '" + c.name + "' was found first in " + earlier->file.string();
    return finish();
  }
  c.reason = str_or(d->score_reason, "");
  c.verdict = d->score > 0 ? PluginCandidate::Verdict::Usable : PluginCandidate::Verdict::Unusable;
  if (d->score == 0 && c.reason.empty()) c.reason = "score 0";
  finish();
}

const PluginCandidate* PluginRegistry::find(const std::string& name) const {
  for (const auto& c : candidates_) {
    if (c.name == name && c.verdict != PluginCandidate::Verdict::Shadowed) return &c;
  }
  return nullptr;
}

std::vector<std::string> PluginRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& c : candidates_) {
    if (!c.name.empty() && std::find(out.begin(), out.end(), c.name) == out.end()) out.push_back(c.name);
  }
  return out;
}

std::unique_ptr<PluginInstance> PluginRegistry::instantiate(const std::string& name,
                                                            const std::vector<std::string>& options) const {
  const PluginCandidate* c = find(name);
  if (c == nullptr) {
    std::string folders;
    for (const auto& f : path_.folders) folders += (folders.empty() ? "" : ", ") + f.string();
    // A rejected file may be the plugin asked for (its name cannot be trusted): say why each was rejected.
    std::string rejected;
    for (const auto& r : candidates_) {
      if (r.verdict == PluginCandidate::Verdict::Rejected) rejected += "; rejected " + r.file.string() + ": " + r.reason;
    }
    throw Error("no plugin named '" + name + "' was found" + did_you_mean(name, names()) + "; searched " +
                (folders.empty() ? "no folders" : folders) +
                " (add a folder with plugin_path in the launch or STRATA_PLUGIN_PATH)" + rejected);
  }
  const std::string who = "plugin '" + name + "' (" + c->file.string() + ")";
  if (c->verdict == PluginCandidate::Verdict::Rejected) throw Error(who + " was rejected: " + c->reason);
  if (c->verdict == PluginCandidate::Verdict::Unusable) {
    throw Error(who + " cannot run on this machine (score 0: " + c->reason + ")");
  }
  const auto& lib = libraries_[static_cast<size_t>(c - candidates_.data())];

  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const auto& o : options) argv.push_back(o.c_str());
  strata_plugin_instance inst{};
  strata_status* status = nullptr;
  try {
    status = lib->init()(host_api(), argv.data(), argv.size(), &inst);
  } catch (...) {
    throw Error(who + ": init threw across the C boundary: " + exception_text(std::current_exception()));
  }
  if (status != nullptr) {
    auto [code, message] = take_status(status);
    throw Error(who + ": init failed (" + status_code_name(code) + "): " + message);
  }
  if (inst.struct_size < kInstanceV1_0 || inst.get_interface == nullptr) {
    throw Error(who + ": init returned an incomplete instance (struct_size " + std::to_string(inst.struct_size) +
                ", get_interface " + (inst.get_interface ? "set" : "missing") + ")");
  }
  return std::unique_ptr<PluginInstance>(new PluginInstance(name, lib, inst));
}

std::string PluginRegistry::best_backend(const std::vector<std::string>& allowed) const {
  const PluginCandidate* best = nullptr;
  for (const auto& c : candidates_) {
    if (c.kind != STRATA_KIND_BACKEND || c.verdict != PluginCandidate::Verdict::Usable) continue;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), c.name) == allowed.end()) continue;
    if (best == nullptr || c.score > best->score) best = &c;
  }
  if (best == nullptr) {
    std::string seen;
    for (const auto& c : candidates_) {
      if (c.kind == STRATA_KIND_BACKEND && !c.name.empty()) {
        seen += (seen.empty() ? "" : "; ") + c.name + ": " + verdict_name(c.verdict) + " (" + c.reason + ")";
      }
    }
    throw Error("no usable backend plugin" + (seen.empty() ? std::string(" was found") : " among: " + seen) +
                " (run `strata plugins` to see every file examined)");
  }
  return best->name;
}

PluginInstance::PluginInstance(std::string name, std::shared_ptr<LoadedLibrary> lib, strata_plugin_instance inst)
    : name_(std::move(name)), lib_(std::move(lib)), instance_(inst) {}

PluginInstance::~PluginInstance() {
  if (instance_.destroy == nullptr) return;
  try {
    instance_.destroy(instance_.ctx);
  } catch (...) {
    log::error("plugin '" + name_ + "': destroy threw across the C boundary: " +
               exception_text(std::current_exception()));
  }
}

const void* PluginInstance::interface(const char* family, uint32_t version, size_t min_size) const {
  const void* table = nullptr;
  try {
    table = instance_.get_interface(instance_.ctx, family, version);
  } catch (...) {
    throw Error("plugin '" + name_ + "' (" + lib_->file().string() + "): get_interface(" + family +
                ") threw across the C boundary: " + exception_text(std::current_exception()));
  }
  if (table == nullptr) return nullptr;
  const auto* header = static_cast<const strata_interface_header*>(table);
  if (header->struct_size < min_size) {
    log::warn("plugin '" + name_ + "': " + family + " table is " + std::to_string(header->struct_size) +
              " bytes, the host needs " + std::to_string(min_size) + "; treated as absent");
    return nullptr;
  }
  return table;
}

std::vector<DeviceSummary> PluginInstance::devices() const {
  const auto* be = static_cast<const strata_backend_v1*>(
      interface(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION, offsetof(strata_backend_v1, device_info) + sizeof(void*)));
  std::vector<DeviceSummary> out;
  if (be == nullptr || be->device_count == nullptr || be->device_info == nullptr) return out;
  uint32_t n = 0;
  try {
    n = be->device_count(instance_.ctx);
    for (uint32_t i = 0; i < n; ++i) {
      strata_device_info info{};
      info.struct_size = sizeof(info);
      throw_if_error(be->device_info(instance_.ctx, i, &info), name_, "device_info(" + std::to_string(i) + ")");
      DeviceSummary d;
      d.name = str_or(info.name, "?");
      d.arch = str_or(info.arch, "");
      d.kind = info.kind == STRATA_DEVICE_GPU ? STRATA_DEVICE_GPU : STRATA_DEVICE_CPU;
      d.memory_total = info.memory_total;
      d.memory_free = info.memory_free;
      d.compute_units = info.compute_units;
      out.push_back(std::move(d));
    }
  } catch (const Error&) {
    throw;
  } catch (...) {
    throw Error("plugin '" + name_ + "' (" + lib_->file().string() + "): a backend call threw across the C boundary: " +
                exception_text(std::current_exception()));
  }
  return out;
}

}  // namespace strata
