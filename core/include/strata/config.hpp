// Launch configuration: one YAML file, then STRATA_* environment switches, then `-o key.path=value` overrides,
// checked against one schema table (core/src/config/schema.cpp). Core alone parses YAML; plugins receive their
// options as flattened `key=value` strings and reject the keys they do not know.
//
// Precedence, lowest first: schema defaults < YAML file < environment < -o. Every effective value records
// where it came from (its Provenance), which `strata config show` prints next to it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::config {

// How much VRAM the expert cache takes: `auto` (what is left after KV and activations), a share of the routed
// experts' bytes (`25%`), or bytes.
struct CacheSize {
  enum class Kind { Auto, Percent, Bytes };
  Kind kind = Kind::Auto;
  double percent = 0;   // 0..100, Kind::Percent
  uint64_t bytes = 0;   // Kind::Bytes
  bool operator==(const CacheSize&) const = default;
};

// Enum order matches the schema's list of allowed names (schema.cpp), which is how names map to values.
enum class CachePolicy { Lru, Lfu };
enum class KvType { F16, Q8_0 };
// The hybrid path's host copy of the experts: the mapped model file (PCIe reads staged through a pinned ring), the
// file with its expert pages also registered piece by piece, or an arena the experts are copied into at start.
enum class HostCopy { File, FileRegistered, Arena, Auto };
// speculative.draft: where verify windows' drafts come from (core/include/strata/speculative.hpp).
enum class DraftKind { Off, Ngram, Model };

struct ExpertsConfig {
  CacheSize cache;
  std::optional<double> pcie_frac;   // nullopt = auto (the link probe sets it)
  int adapt_swaps = 0;
  int prompt_chunks = 0;               // 0: a layer's PCIe experts all land before its experts are computed
  CachePolicy policy = CachePolicy::Lfu;
  std::optional<std::string> profile;  // absolute path, or "auto" (the profile beside the model, if any)
  std::optional<std::string> record;   // absolute path: the run's routing counts are written there at exit
  std::optional<std::string> arena;    // absolute path of a file on tmpfs; nullopt: private memory
  HostCopy host_copy = HostCopy::Auto;
  bool huge_pages = true;  // the file as the host copy: its expert pages in 2 MiB pages where the kernel allows
  double peer_hot = 0;
  // experts.arena set makes the host copy that arena whatever experts.host_copy says.
  HostCopy host_copy_kind() const { return arena ? HostCopy::Arena : host_copy; }
  bool operator==(const ExpertsConfig&) const = default;
};

struct RuntimeConfig {
  int context = 0;
  KvType kv_type = KvType::F16;
  int slots = 0;
  int threads = 0;       // 0 = all cores
  int batch = 0;         // prefill chunk
  int peer_device = 0;   // -1 = none
  int layer_split = 0;   // 0 = off
  bool graphs = true;
  uint64_t gpu_memory = 0;  // bytes the engine may use on each GPU; 0 = all of it
  bool canonical_double = false;  // GPU backends: norms, RoPE, softmax, router (and attention) in double, the CPU's bits
  bool operator==(const RuntimeConfig&) const = default;
};

struct SamplingConfig {
  double temperature = 0;
  int top_k = 0;
  double top_p = 0;
  double min_p = 0;
  double repeat_penalty = 0;
  int repeat_last_n = 0;
  int64_t seed = 0;
  int n_predict = 0;     // -1 = until end of text or context
  bool operator==(const SamplingConfig&) const = default;
};

// Speculative decoding: verify windows of the pending token and up to n_max drafted ones.
struct SpeculativeConfig {
  DraftKind draft = DraftKind::Off;
  int n_max = 0;
  std::optional<std::string> model;  // absolute path of the draft model (draft: model)
  std::string backend;               // the draft model's backend: cpu, launch or a backend's name
  bool operator==(const SpeculativeConfig&) const = default;
};

struct ElasticConfig {
  int lanes = 0;
  double hold_s = 0;
  bool operator==(const ElasticConfig&) const = default;
};

struct ServeConfig {
  std::string host;
  int port = 0;
  std::optional<std::string> api_key;
  int queue = 0;
  double request_timeout_s = 0;
  double idle_timeout_s = 0;
  uint64_t max_body = 0;  // bytes
  ElasticConfig elastic;
  bool operator==(const ServeConfig&) const = default;
};

// One `plugins.<name>` entry. Options are the plugin's own keys, flattened (nested maps as `a.b`, lists joined
// with commas), in the order they first appeared; core does not know them.
struct PluginEntry {
  std::string name;
  bool enabled = true;
  std::vector<std::pair<std::string, std::string>> options;
  std::vector<std::string> flattened() const;  // "key=value" strings, as handed to the plugin
  bool operator==(const PluginEntry&) const = default;
};

// Where an effective value came from.
struct Provenance {
  enum class Kind { Default, File, Environment, Override };
  Kind kind = Kind::Default;
  std::string file;      // Kind::File: the launch file as the user named it
  int line = 0;          // Kind::File: 1-based
  int column = 0;        // Kind::File: 1-based
  std::string variable;  // Kind::Environment
  // "default", "FILE:LINE", "environment VAR" or "-o".
  std::string text() const;
  bool operator==(const Provenance&) const = default;
};

// The effective launch. Paths are absolute (relative ones in a file resolve against the file's folder, those
// from the environment or -o against the working directory).
struct Launch {
  std::optional<std::string> model;
  std::optional<std::string> mmproj;  // the model's vision projector (a Qwen3-VL "mmproj" GGUF), for images
  std::vector<std::string> plugin_path;
  std::string backend;
  std::vector<PluginEntry> plugins;
  ExpertsConfig experts;
  RuntimeConfig runtime;
  SamplingConfig sampling;
  SpeculativeConfig speculative;
  ServeConfig serve;
  std::string file;  // the launch file as named by the user, or "" when there is none

  // Keyed by dotted key: "runtime.context", "plugins.cuda.enabled", "plugins.cuda.device".
  std::map<std::string, Provenance> provenance;

  const PluginEntry* plugin(std::string_view name) const;  // nullptr when the launch does not mention it
  // The provenance of a key; "default" for keys never set.
  Provenance from(std::string_view key) const;
};

// One problem found while reading a launch.
struct Diagnostic {
  // Sorted in this order: syntax and schema errors, then conflicts between keys, then missing files.
  enum class Kind { Syntax, Schema, Conflict, MissingFile };
  enum class Severity { Error, Warning };
  Kind kind = Kind::Schema;
  Severity severity = Severity::Error;
  std::string origin;   // "FILE:LINE:COLUMN", "FILE", "environment STRATA_X" or "-o key=value"
  int line = 0;         // 1-based when the origin is a position in the file, else 0
  int column = 0;
  std::string message;  // starts with the key it is about, where there is one
  std::string text() const;  // "ORIGIN: MESSAGE" (warnings: "ORIGIN: warning: MESSAGE")
};

// The process environment as a map (only what the loader reads is looked at: STRATA_* variables).
using Environment = std::map<std::string, std::string>;
// `key.path=value` strings, as given after -o.
using Overrides = std::vector<std::string>;

// The schema's defaults, with every provenance "default". No model is set.
Launch defaults();

// Every diagnostic of a launch: the file (empty path = no file), then the environment switches, then the
// overrides; sorted by kind (schema before missing files), then by position.
std::vector<Diagnostic> check_file(const std::filesystem::path& file, const Environment& env,
                                   const Overrides& overrides);

// The effective launch. Throws strata::Error carrying every error's text, one per line; warnings are logged.
Launch load(const std::filesystem::path& file, const Environment& env, const Overrides& overrides);

// The STRATA_* variables of this process, for check_file/load.
Environment process_environment();

// The effective launch as YAML with a trailing `# <provenance>` comment per value (`strata config show`).
// The text loads back to the same values; serve.api_key is shown as "<redacted>".
std::string render_yaml(const Launch& launch);
// The same as JSON: {"launch": {...typed values...}, "provenance": {"key": "FILE:LINE", ...}}. Byte sizes are
// integers (bytes); `auto` values are the string "auto".
std::string render_json(const Launch& launch);

// The configuration reference (every key: type, default, description; then the environment switches) as
// markdown tables, generated from the schema.
std::string reference_markdown();

// One row of the reference.
struct KeyReference {
  std::string key;           // "runtime.context", "plugins.<name>.enabled"
  std::string type;          // "int >= 16", "enum: lru, lfu", ...
  std::string default_text;  // "4096", "" when there is no default
  std::string doc;
};
std::vector<KeyReference> reference();

struct EnvSwitch {
  std::string variable;  // "STRATA_PEER_HOT"
  std::string key;       // "experts.peer_hot"
};
const std::vector<EnvSwitch>& environment_switches();

// Byte sizes: a whole number of bytes, optionally with a fraction and a unit: B, KiB, MiB, GiB, TiB (powers of
// 1024) or KB (kB), MB, GB, TB (powers of 1000); "1.5GiB" is fine, a result that is not a whole number of bytes
// ("1.5B"), a negative size or an unknown unit is an error. Throws strata::Error naming the problem.
uint64_t parse_byte_size(std::string_view text);
// The shortest exact spelling: "8GiB", "512MiB", "1000000" (plain bytes when no binary unit divides it).
std::string format_byte_size(uint64_t bytes);

}  // namespace strata::config
