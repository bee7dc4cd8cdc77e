// How often each routed expert was used: per (layer, expert) the number of tokens routed to it, over a number of
// token positions. Saved by a run and loaded by a later one to fill the cache with the experts that mattered.
//
// The file is JSON, small (one integer per expert), versioned and tied to one model:
//   {"format": "strata-expert-profile", "version": 1,
//    "model": {"fingerprint": "...", "n_layer": 48, "n_expert": 128},
//    "positions": 4096, "counts": [[...n_expert integers...], ...n_layer rows]}
// Loading checks every field and refuses a profile of another model, naming what differs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
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

class ExpertProfile {
 public:
  static constexpr int kFormatVersion = 1;
  static constexpr std::string_view kFormatName = "strata-expert-profile";

  explicit ExpertProfile(ModelIdentity identity);

  const ModelIdentity& identity() const { return identity_; }
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

  std::string to_json() const;
  // Parses a profile's text; `origin` names it in messages (the file). Throws strata::Error naming the field and
  // the fix when the text is not a profile, of another version, or of another model than `expected`.
  static ExpertProfile from_json(std::string_view text, const std::string& origin, const ModelIdentity& expected);

  // Writes the file through a temporary and a rename, so a crash never leaves half a profile.
  void save(const std::filesystem::path& path) const;
  static ExpertProfile load(const std::filesystem::path& path, const ModelIdentity& expected);

 private:
  ModelIdentity identity_;
  uint64_t positions_ = 0;
  std::vector<uint64_t> counts_;  // KeySpace-indexed
};

}  // namespace strata::experts
