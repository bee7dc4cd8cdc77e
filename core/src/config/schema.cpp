#include "schema.hpp"

#include <cmath>

#include "scalars.hpp"

namespace strata::config {
namespace {

// Row makers: one per kind of key, so that every row of the table below names only what matters for it.
Key section(std::string_view path, Type type, std::string_view doc) {
  Key k;
  k.path = path;
  k.type = type;
  k.doc = doc;
  return k;
}

Key value(std::string_view path, Type type, std::string_view default_text, std::string_view doc,
          Field (*field)(Launch&)) {
  Key k = section(path, type, doc);
  k.default_text = default_text;
  k.field = field;
  return k;
}

Key unset(std::string_view path, Type type, std::string_view doc, Field (*field)(Launch&), bool secret = false) {
  Key k = value(path, type, "", doc, field);
  k.optional = true;
  k.secret = secret;
  return k;
}

Key integer(std::string_view path, std::string_view default_text, int64_t lo, int64_t hi, std::string_view doc,
            Field (*field)(Launch&)) {
  Key k = value(path, Type::Int, default_text, doc, field);
  k.ints = {lo, hi};
  return k;
}

Key number(std::string_view path, Type type, std::string_view default_text, FloatRange range, std::string_view doc,
           Field (*field)(Launch&)) {
  Key k = value(path, type, default_text, doc, field);
  k.floats = range;
  return k;
}

Key choice(std::string_view path, std::string_view default_text, std::vector<std::string_view> choices,
           std::string_view doc, Field (*field)(Launch&)) {
  Key k = value(path, Type::Enum, default_text, doc, field);
  k.choices = std::move(choices);
  return k;
}

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr FloatRange kUnit{0, 1};
constexpr FloatRange kNonNegative{0, kInf};
constexpr FloatRange kPositive{0, kInf, true};

std::vector<Key> build_schema() {
  using T = Type;
  return {
      unset("model", T::Path, "the GGUF model file (required to run)", [](Launch& l) -> Field { return &l.model; }),
      unset("mmproj", T::Path,
            "the model's vision projector (a Qwen3-VL mmproj GGUF): images in `run --image`, serve's image_url parts "
            "and engine requests' images",
            [](Launch& l) -> Field { return &l.mmproj; }),
      value("plugin_path", T::PathList, "", "extra folders searched for plugins",
            [](Launch& l) -> Field { return &l.plugin_path; }),
      value("backend", T::String, "auto", "the backend plugin to run on; auto = the best-scoring enabled backend",
            [](Launch& l) -> Field { return &l.backend; }),

      section("plugins", T::PluginTable, "plugin name -> its switch and its own options"),
      section("plugins.*", T::PluginSection, "one plugin: `enabled` plus options core hands over as key=value strings"),
      value("plugins.*.enabled", T::Bool, "true", "false: the run is byte-identical to one without this plugin",
            nullptr),
      section("plugins.*.*", T::PluginOption,
              "the plugin's own option (nested maps become a.b=value, lists are comma-joined); the plugin checks it"),

      section("experts", T::Section, "the expert cache (core's, shared by the GPU backends)"),
      value("experts.cache", T::CacheSize, "auto",
            "VRAM for expert slots: auto (what is left after KV and activations), a share of the routed experts' bytes (25%) or a size (8GiB)",
            [](Launch& l) -> Field { return &l.experts.cache; }),
      number("experts.pcie_frac", T::FloatOrAuto, "auto", kUnit,
             "share of a layer's missed experts read over PCIe; auto = measured by the link probe",
             [](Launch& l) -> Field { return &l.experts.pcie_frac; }),
      integer("experts.adapt_swaps", "4", 0, kIntMax, "most cache swaps between two windows (0 = a fixed cache)",
              [](Launch& l) -> Field { return &l.experts.adapt_swaps; }),
      integer("experts.prompt_chunks", "0", 0, 64,
              "prompt windows: a layer's PCIe experts cross the link in up to this many chunks, each computed as it lands (0 = off: all land first; off is faster on the H200, docs/PERFORMANCE.md)",
              [](Launch& l) -> Field { return &l.experts.prompt_chunks; }),
      choice("experts.policy", "lfu", {"lru", "lfu"}, "which cached expert to evict",
             [](Launch& l) -> Field { return &l.experts.policy; }),
      unset("experts.profile", T::Path,
            "a routing profile (the JSON `strata profile` or experts.record writes) that fills the expert cache with the most used experts first; auto: the model's own, <model>.profile.json beside it, when that exists (unset: a uniform fill)",
            [](Launch& l) -> Field { return &l.experts.profile; }),
      unset("experts.record", T::Path,
            "write the run's routing counts there as a profile when the engine ends (also on SIGINT/SIGTERM and at serve's shutdown); any backend that sees its routes (the CPU's, the hybrid path)",
            [](Launch& l) -> Field { return &l.experts.record; }),
      unset("experts.arena", T::Path,
            "a file on tmpfs (/dev/shm/...) for the experts' host copy, an arena whatever experts.host_copy says, kept between runs and mapped by every engine that names it (the elastic pair's shared copy); unset: experts.host_copy decides",
            [](Launch& l) -> Field { return &l.experts.arena; }),
      choice("experts.host_copy", "auto", {"file", "file_registered", "arena", "auto"},
             "the hybrid path's host copy of the experts: file = the model file's own mapping, no second copy (PCIe reads staged through a few pinned buffers); file_registered = the same with its expert pages page-locked piece by piece, so PCIe reads them directly; auto = file_registered when the experts fit in 90% of the memory available (for a file on tmpfs, plus its resident pages), else file; arena = a copy in page-locked private memory filled at start (experts.arena set: that tmpfs file, whatever this says)",
             [](Launch& l) -> Field { return &l.experts.host_copy; }),
      value("experts.huge_pages", T::Bool, "true",
            "the file as the host copy: ask for its expert pages in 2 MiB pages (MADV_HUGEPAGE; on tmpfs the pages are collapsed at start, MADV_COLLAPSE), so the CPU pool and PCIe walk fewer page-table entries; false: 4 KiB pages (MADV_NOHUGEPAGE)",
            [](Launch& l) -> Field { return &l.experts.huge_pages; }),
      number("experts.peer_hot", T::Float, "0.5", kUnit, "share of the cached experts dealt to the peer card, down the profile's rank (0.5: every second)",
             [](Launch& l) -> Field { return &l.experts.peer_hot; }),

      section("runtime", T::Section, "the engine's sizes and devices"),
      integer("runtime.context", "4096", 16, kIntMax, "context length in tokens",
              [](Launch& l) -> Field { return &l.runtime.context; }),
      choice("runtime.kv_type", "f16", {"f16", "q8_0"}, "KV cache element type",
             [](Launch& l) -> Field { return &l.runtime.kv_type; }),
      value("runtime.gpu_memory", T::ByteSize, "0",
            "GPU memory the engine may use, per device (24GiB: plan as on a 24 GiB card); the dense weights, KV cache and activations must fit, and experts.cache auto takes what they leave (0 = all the device has free)",
            [](Launch& l) -> Field { return &l.runtime.gpu_memory; }),
      integer("runtime.slots", "1", 1, 64, "sequences decoded together",
              [](Launch& l) -> Field { return &l.runtime.slots; }),
      integer("runtime.threads", "0", 0, kIntMax,
              "threads that copy the routed experts into the hybrid path's host arena (experts.host_copy: arena) and probe the host's read rate (0 = all CPUs); the CPU pool's are plugins.cpu_avx2.workers",
              [](Launch& l) -> Field { return &l.runtime.threads; }),
      integer("runtime.batch", "4096", 1, kIntMax, "prefill chunk in tokens (at most the context)",
              [](Launch& l) -> Field { return &l.runtime.batch; }),
      integer("runtime.peer_device", "-1", -1, kIntMax, "GPU (the backend's device index) used as a peer expert tier of the hybrid path; the engine's own GPU gives a second logical device (-1 = none)",
              [](Launch& l) -> Field { return &l.runtime.peer_device; }),
      integer("runtime.layer_split", "0", 0, kIntMax,
              "layers on the first GPU when layers are split between two (0 = off)",
              [](Launch& l) -> Field { return &l.runtime.layer_split; }),
      value("runtime.graphs", T::Bool, "true", "the hybrid path's fast mode: each decode step one device program (a CUDA graph) that waits on flags for the host's expert placement; false: a host step per MoE layer (same bytes)",
            [](Launch& l) -> Field { return &l.runtime.graphs; }),
      value("runtime.canonical_double", T::Bool, "false", "GPU backends compute norms, RoPE, softmax, router and attention in double, rounded once: the CPU engine's bits (1/64 rate on consumer GPUs); false: float (docs/CANONICAL_ARITHMETIC.md section 6)",
            [](Launch& l) -> Field { return &l.runtime.canonical_double; }),

      section("sampling", T::Section, "token sampling (a request may override these)"),
      number("sampling.temperature", T::Float, "0.8", kNonNegative, "0 = greedy",
             [](Launch& l) -> Field { return &l.sampling.temperature; }),
      integer("sampling.top_k", "40", 0, kIntMax, "keep the k likeliest tokens (0 = off)",
              [](Launch& l) -> Field { return &l.sampling.top_k; }),
      number("sampling.top_p", T::Float, "0.95", kUnit, "keep the smallest set with this total probability (1 = off)",
             [](Launch& l) -> Field { return &l.sampling.top_p; }),
      number("sampling.min_p", T::Float, "0.05", kUnit, "drop tokens below this share of the likeliest (0 = off)",
             [](Launch& l) -> Field { return &l.sampling.min_p; }),
      number("sampling.repeat_penalty", T::Float, "1.0", kPositive,
             "divide the logits of recent tokens by this (1 = off)",
             [](Launch& l) -> Field { return &l.sampling.repeat_penalty; }),
      integer("sampling.repeat_last_n", "64", 0, kIntMax, "how many recent tokens the penalty looks at",
              [](Launch& l) -> Field { return &l.sampling.repeat_last_n; }),
      integer("sampling.seed", "1", 0, std::numeric_limits<int64_t>::max(), "random seed (same seed, same text)",
              [](Launch& l) -> Field { return &l.sampling.seed; }),
      integer("sampling.n_predict", "256", -1, kIntMax, "tokens to generate (-1 = until end of text or context)",
              [](Launch& l) -> Field { return &l.sampling.n_predict; }),

      section("speculative", T::Section, "speculative decoding: verify windows that never change a greedy token"),
      choice("speculative.draft", "off", {"off", "ngram", "model"},
             "where drafts come from: ngram (prompt lookup: the longest recent match in the context), model (speculative.model), off",
             [](Launch& l) -> Field { return &l.speculative.draft; }),
      integer("speculative.n_max", "8", 1, 31, "most drafted tokens per verify window (a window is n_max + 1 tokens)",
              [](Launch& l) -> Field { return &l.speculative.n_max; }),
      unset("speculative.model", T::Path,
            "the draft model for draft: model, a small GGUF with the same vocabulary (refused when it differs)",
            [](Launch& l) -> Field { return &l.speculative.model; }),
      value("speculative.backend", T::String, "cpu",
            "the draft model's backend: cpu (cpu_avx2 when usable, else the reference), launch (the launch's backend) or a backend's name",
            [](Launch& l) -> Field { return &l.speculative.backend; }),

      section("serve", T::Section, "the HTTP server (`strata serve`)"),
      value("serve.host", T::String, "127.0.0.1", "address to listen on",
            [](Launch& l) -> Field { return &l.serve.host; }),
      integer("serve.port", "8080", 1, 65535, "TCP port", [](Launch& l) -> Field { return &l.serve.port; }),
      unset("serve.api_key", T::String, "bearer token clients must send (unset = none)",
            [](Launch& l) -> Field { return &l.serve.api_key; }, true),
      integer("serve.queue", "64", 0, kIntMax, "requests waiting beyond the running ones (more get 503)",
              [](Launch& l) -> Field { return &l.serve.queue; }),
      number("serve.request_timeout_s", T::Float, "600", kPositive, "longest a request may run, in seconds",
             [](Launch& l) -> Field { return &l.serve.request_timeout_s; }),
      number("serve.idle_timeout_s", T::Float, "30", kNonNegative,
             "close a keep-alive connection idle this long, in seconds",
             [](Launch& l) -> Field { return &l.serve.idle_timeout_s; }),
      value("serve.max_body", T::ByteSize, "8MiB", "largest request body",
            [](Launch& l) -> Field { return &l.serve.max_body; }),
      section("serve.elastic", T::Section, "the elastic pair's desk (two engines, one card each)"),
      integer("serve.elastic.lanes", "1", 1, 2, "engines serving requests (2 = wake the helper for a second request)",
              [](Launch& l) -> Field { return &l.serve.elastic.lanes; }),
      number("serve.elastic.hold_s", T::Float, "30", kNonNegative, "seconds the helper stays awake after its last request",
             [](Launch& l) -> Field { return &l.serve.elastic.hold_s; }),
  };
}

bool component_matches(std::string_view pattern, std::string_view component) {
  return pattern == "*" || pattern == component;
}

}  // namespace

const std::vector<Key>& schema() {
  static const std::vector<Key> table = build_schema();
  return table;
}

const Key* find_key(const std::vector<std::string>& path) {
  const Key* best = nullptr;
  int best_wildcards = 0;
  for (const Key& key : schema()) {
    const std::vector<std::string> pattern = split_path(key.path);
    if (pattern.size() != path.size()) continue;
    bool match = true;
    int wildcards = 0;
    for (size_t i = 0; i < path.size() && match; ++i) {
      match = component_matches(pattern[i], path[i]);
      wildcards += pattern[i] == "*" ? 1 : 0;
    }
    if (match && (best == nullptr || wildcards < best_wildcards)) {
      best = &key;
      best_wildcards = wildcards;
    }
  }
  return best;
}

std::vector<std::string> child_names(std::string_view section_pattern) {
  std::vector<std::string> names;
  const std::vector<std::string> parent = split_path(section_pattern);
  for (const Key& key : schema()) {
    const std::vector<std::string> pattern = split_path(key.path);
    if (pattern.size() != parent.size() + 1 || pattern.back() == "*") continue;
    bool under = true;
    for (size_t i = 0; i < parent.size() && under; ++i) under = pattern[i] == parent[i];
    if (under) names.push_back(pattern.back());
  }
  return names;
}

std::vector<std::string> keys_named(std::string_view word) {
  std::vector<std::string> found;
  for (const Key& key : schema()) {
    if (key.path.find('*') != std::string_view::npos) continue;
    const std::vector<std::string> pattern = split_path(key.path);
    if (pattern.back() == word) found.emplace_back(key.path);
  }
  return found;
}

std::string range_text(const Key& key) {
  if (key.type == Type::Int) {
    const bool lo = key.ints.lo != std::numeric_limits<int32_t>::min();
    const bool hi = key.ints.hi != std::numeric_limits<int32_t>::max() &&
                    key.ints.hi != std::numeric_limits<int64_t>::max();
    if (lo && hi) return std::to_string(key.ints.lo) + ".." + std::to_string(key.ints.hi);
    if (lo) return ">= " + std::to_string(key.ints.lo);
    if (hi) return "<= " + std::to_string(key.ints.hi);
    return "";
  }
  const bool lo = std::isfinite(key.floats.lo);
  const bool hi = std::isfinite(key.floats.hi);
  auto num = [](double v) {
    std::string s = format_float(v);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    return s;
  };
  if (lo && hi && !key.floats.lo_open) return num(key.floats.lo) + ".." + num(key.floats.hi);
  if (lo && hi) return "> " + num(key.floats.lo) + " and <= " + num(key.floats.hi);
  if (lo) return (key.floats.lo_open ? "> " : ">= ") + num(key.floats.lo);
  if (hi) return "<= " + num(key.floats.hi);
  return "";
}

std::string describe_type(const Key& key) {
  const std::string range = range_text(key);
  switch (key.type) {
    case Type::Section: return "section";
    case Type::PluginTable: return "map: plugin name -> plugin section";
    case Type::PluginSection: return "map";
    case Type::PluginOption: return "any (given to the plugin as a string)";
    case Type::String: return "string";
    case Type::Path: return "path";
    case Type::PathList: return "list of paths";
    case Type::Bool: return "bool";
    case Type::Int: return range.empty() ? "int" : "int " + range;
    case Type::Float: return range.empty() ? "float" : "float " + range;
    case Type::Enum: {
      std::string s = "one of: ";
      for (size_t i = 0; i < key.choices.size(); ++i) s += (i ? ", " : "") + std::string(key.choices[i]);
      return s;
    }
    case Type::ByteSize: return "byte size (8MiB, 1GB, 1000000)";
    case Type::CacheSize: return "auto, percent (25%) or byte size (8GiB)";
    case Type::FloatOrAuto: return range.empty() ? "auto or float" : "auto or float " + range;
  }
  return "";
}

std::string expected_text(const Key& key) {
  const std::string range = range_text(key);
  const std::string limits = range.empty() ? "" : " " + range;
  switch (key.type) {
    case Type::Int: return "an integer" + limits;
    case Type::Float: return "a number" + limits;
    case Type::FloatOrAuto: return "auto or a number" + limits;
    case Type::Bool: return "true or false";
    case Type::String: return "a string";
    case Type::Path: return "a path";
    case Type::PathList: return "a path or a list of paths";
    case Type::ByteSize: return "a size such as 8MiB";
    case Type::CacheSize: return "auto, a percentage such as 25% or a size such as 8GiB";
    case Type::Enum: return describe_type(key);
    case Type::Section:
    case Type::PluginTable:
    case Type::PluginSection: return "a map of keys";
    case Type::PluginOption: return "a value";
  }
  return "a value";
}

std::string join_path(const std::vector<std::string>& path) {
  std::string s;
  for (size_t i = 0; i < path.size(); ++i) s += (i ? "." : "") + path[i];
  return s;
}

std::vector<std::string> split_path(std::string_view dotted) {
  std::vector<std::string> parts;
  if (dotted.empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    parts.emplace_back(dotted.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

}  // namespace strata::config
