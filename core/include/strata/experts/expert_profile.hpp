// How often each routed expert was used: per (layer, expert) the number of tokens routed to it, over a number of
// token positions. Saved by a run and loaded by a later one to fill the cache with the experts that mattered.
//
// The file is JSON, small (one integer per expert), versioned and tied to one model (`strata profile` writes it,
// and so does an engine with experts.record):
//   {"format": "strata-expert-profile", "version": 2,
//    "model": {"fingerprint": "...", "n_layer": 48, "n_expert": 128,
//              "name": "M.gguf", "path": "/models/M.gguf", "file_bytes": 17696000000},
//    "source": {"prompts": "built-in (8 prompts)", "prompt_count": 8, "decode_tokens": 16, "backend": "...",
//               "recorded_by": "strata profile"},
//    "positions": 4096, "counts": [[...n_expert integers...], ...n_layer rows]}
// "positions" is the number of tokens counted (each passes every layer once). The model's name, path and size and
// the "source" are for a reader; the fingerprint (the GGUF header's hash) and the shape tie the profile to the
// model. Version 1 files (without name, path, size and source) still load.
// Loading checks every field and refuses a profile of another model, naming what differs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/experts/expert_key.hpp"

namespace strata::experts {

// Which model a profile belongs to. The fingerprint is the caller's (e.g. the file's name, size and expert
// tensor types); the shape is checked separately so the message can say which part differs.
struct ModelIdentity {
  std::string fingerprint;
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;
  bool operator==(const ModelIdentity&) const = default;
};

// What a reader of a profile file is told besides the counts (all optional: empty or 0 is left out of the file).
struct ProfileInfo {
  std::string model_name;   // the file's name
  std::string model_path;   // its absolute path when recorded
  uint64_t file_bytes = 0;  // its size
  std::string prompts;      // where the counted tokens came from ("built-in (8 prompts)", "FILE (N prompts)", "a run")
  uint64_t prompt_count = 0;
  uint64_t decode_tokens = 0;  // decode tokens per prompt
  std::string backend;
  std::string recorded_by;  // "strata profile", "experts.record"
  bool operator==(const ProfileInfo&) const = default;
};

// The profile stored beside a model, which `experts.profile: auto` uses and `strata profile` writes without --out:
// "<model file>.profile.json" (M.gguf -> M.gguf.profile.json).
std::filesystem::path default_profile_path(const std::filesystem::path& model);

class ExpertProfile {
 public:
  static constexpr int kFormatVersion = 2;
  static constexpr std::string_view kFormatName = "strata-expert-profile";

  explicit ExpertProfile(ModelIdentity identity);

  const ModelIdentity& identity() const { return identity_; }
  const ProfileInfo& info() const { return info_; }
  void set_info(ProfileInfo info) { info_ = std::move(info); }
  KeySpace key_space() const { return {identity_.n_layer, identity_.n_expert}; }

  // `tokens` more tokens were routed to key.
  void record(ExpertKey key, uint64_t tokens);
  // `n` more token positions went through the model (each passes every layer once).
  void record_positions(uint64_t n) { positions_ += n; }

  uint64_t count(ExpertKey key) const;
  uint64_t positions() const { return positions_; }
  // Tokens routed to key per position: its expected share of a token (0 when nothing was recorded).
  double rate(ExpertKey key) const;

  // Every key, most used first; equal counts by (layer, expert).
  std::vector<ExpertKey> rank() const;
  // Adds another profile's counts and positions. Throws strata::Error when it is of another model.
  void merge(const ExpertProfile& other);
  // Every layer's counts of `routed` ([n_layer * n_expert], layer-major: Engine::expert_usage's) added, and the
  // positions they came from: the most tokens any layer routed divided by the experts each token takes
  // (`experts_per_token`), since every token passes each MoE layer once.
  void add_counts(std::span<const uint64_t> routed, uint32_t experts_per_token);

  std::string to_json() const;
  // Parses a profile's text; `origin` names it in messages (the file). Throws strata::Error naming the field and
  // the fix when the text is not a profile, of another version, or of another model than `expected`.
  static ExpertProfile from_json(std::string_view text, const std::string& origin, const ModelIdentity& expected);

  // Writes the file through a temporary and a rename, so a crash never leaves half a profile.
  void save(const std::filesystem::path& path) const;
  static ExpertProfile load(const std::filesystem::path& path, const ModelIdentity& expected);

 private:
  ModelIdentity identity_;
  ProfileInfo info_;
  uint64_t positions_ = 0;
  std::vector<uint64_t> counts_;  // KeySpace-indexed
};

}  // namespace strata::experts
