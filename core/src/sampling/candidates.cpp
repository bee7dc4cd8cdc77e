// The sampling steps on a candidate list (strata/sampling.hpp's sampling namespace).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "strata/sampling.hpp"

namespace strata::sampling {
namespace {

void renormalize(std::vector<Candidate>& c) {
  double total = 0.0;
  for (const Candidate& x : c) total += x.p;
  for (Candidate& x : c) x.p /= total;
}

}  // namespace

void apply_logit_bias(std::vector<float>& logits, std::span<const std::pair<TokenId, float>> bias) {
  for (const auto& [id, b] : bias) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[static_cast<size_t>(id)] += b;
  }
}

void apply_frequency_presence(std::vector<float>& logits, const std::map<TokenId, int>& counts, float frequency,
                              float presence) {
  if (frequency == 0.0f && presence == 0.0f) return;
  for (const auto& [id, n] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size() || n <= 0) continue;
    logits[static_cast<size_t>(id)] -= static_cast<float>(n) * frequency + presence;
  }
}

void apply_repeat_penalty(std::vector<float>& logits, std::span<const TokenId> history, float penalty, int last_n) {
  if (penalty == 1.0f || last_n <= 0) return;
  const size_t n = std::min(history.size(), static_cast<size_t>(last_n));
  const std::set<TokenId> recent(history.end() - static_cast<std::ptrdiff_t>(n), history.end());
  for (TokenId id : recent) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(id)];
    l = l > 0.0f ? l / penalty : l * penalty;
  }
}

std::vector<Candidate> sorted_candidates(std::span<const float> logits) {
  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c[i] = {static_cast<TokenId>(i), logits[i], 0.0};
  std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.logit > b.logit; });
  return c;
}

void top_k(std::vector<Candidate>& c, int k) {
  if (k > 0 && static_cast<size_t>(k) < c.size()) c.resize(static_cast<size_t>(k));
}

void softmax(std::vector<Candidate>& c, float temperature) {
  if (c.empty()) return;
  const double t = static_cast<double>(temperature);
  const double top = static_cast<double>(c.front().logit);
  double total = 0.0;
  for (Candidate& x : c) total += x.p = std::exp((static_cast<double>(x.logit) - top) / t);
  for (Candidate& x : c) x.p /= total;
}

void top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f) return;
  double sum = 0.0;
  size_t keep = 0;
  while (keep < c.size()) {
    sum += c[keep].p;
    ++keep;
    if (sum >= static_cast<double>(p)) break;
  }
  c.resize(std::max<size_t>(keep, 1));
  renormalize(c);
}

void min_p(std::vector<Candidate>& c, float p) {
  if (p <= 0.0f || c.empty()) return;
  const double floor = static_cast<double>(p) * c.front().p;
  size_t keep = 1;
  while (keep < c.size() && c[keep].p >= floor) ++keep;
  c.resize(keep);
  renormalize(c);
}

size_t draw(const std::vector<Candidate>& c, double u) {
  double cumulative = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    cumulative += c[i].p;
    if (u < cumulative) return i;
  }
  return c.size() - 1;  // u at the very top, past the rounding of the sum
}

TokenId argmax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<TokenId>(best);
}

}  // namespace strata::sampling
