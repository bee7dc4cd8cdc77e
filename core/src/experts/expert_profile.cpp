#include "strata/experts/expert_profile.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "strata/error.hpp"

namespace strata::experts {

namespace {

std::string shape_text(const ModelIdentity& id) {
  return "\"" + id.fingerprint + "\" (" + std::to_string(id.n_layer) + " layers x " + std::to_string(id.n_expert) +
         " experts)";
}

}  // namespace

ExpertProfile::ExpertProfile(ModelIdentity identity) : identity_(std::move(identity)) {
  if (identity_.n_layer == 0 || identity_.n_expert == 0)
    throw Error("expert profile of " + shape_text(identity_) + ": a profile needs at least one layer and one expert");
  counts_.assign(key_space().size(), 0);
}

void ExpertProfile::record(ExpertKey key, uint64_t tokens) {
  if (key.layer >= identity_.n_layer || key.expert >= identity_.n_expert)
    throw Error("expert profile: layer " + std::to_string(key.layer) + " expert " + std::to_string(key.expert) +
                " is outside the model's " + std::to_string(identity_.n_layer) + " layers x " +
                std::to_string(identity_.n_expert) + " experts");
  counts_[key_space().index(key)] += tokens;
}

uint64_t ExpertProfile::count(ExpertKey key) const {
  return key.layer < identity_.n_layer && key.expert < identity_.n_expert ? counts_[key_space().index(key)] : 0;
}

double ExpertProfile::rate(ExpertKey key) const {
  return positions_ == 0 ? 0.0 : static_cast<double>(count(key)) / static_cast<double>(positions_);
}

std::vector<ExpertKey> ExpertProfile::rank() const {
  std::vector<size_t> order(counts_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Indices are layer-major, so ascending index is ascending (layer, expert).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return counts_[a] > counts_[b]; });
  std::vector<ExpertKey> keys;
  keys.reserve(order.size());
  for (size_t i : order) keys.push_back(key_space().key(i));
  return keys;
}

void ExpertProfile::merge(const ExpertProfile& other) {
  if (!(other.identity_ == identity_))
    throw Error("cannot merge the expert profile of " + shape_text(other.identity_) + " into one of " +
                shape_text(identity_) + ": profiles of different models do not add up");
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  positions_ += other.positions_;
}

void ExpertProfile::add_counts(std::span<const uint64_t> routed, uint32_t experts_per_token) {
  if (routed.size() != counts_.size())
    throw Error("expert profile of " + shape_text(identity_) + ": " + std::to_string(routed.size()) +
                " routing counts given, expected " + std::to_string(counts_.size()));
  if (experts_per_token == 0) throw Error("expert profile: a token takes at least one expert");
  uint64_t widest = 0;
  for (uint32_t l = 0; l < identity_.n_layer; ++l) {
    uint64_t row = 0;
    for (uint32_t e = 0; e < identity_.n_expert; ++e) {
      const size_t i = key_space().index({l, e});
      counts_[i] += routed[i];
      row += routed[i];
    }
    widest = std::max(widest, row);
  }
  positions_ += (widest + experts_per_token - 1) / experts_per_token;
}

std::filesystem::path default_profile_path(const std::filesystem::path& model) {
  return model.string() + ".profile.json";
}

}  // namespace strata::experts
