#include "router_skew.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rng.hpp"

namespace strata::mkmodel {
namespace {

constexpr int kSamples = 2048;
constexpr int kIterations = 80;
constexpr double kMaxShare = 0.5;
constexpr float kMaxScale = 64.0f;

// Stream keys of the generator's own draws (no tensor has these indices).
constexpr uint64_t kCalibrationStream = ~uint64_t{0} - 1;
constexpr uint64_t kCheckStream = ~uint64_t{0} - 2;
constexpr uint64_t kPermutationStream = ~uint64_t{0} - 3;

// logits[t * E + e] = row_e . h_t for kSamples Gaussian hidden states h_t.
std::vector<float> sample_logits(const std::vector<float>& rows, uint32_t n_expert, uint32_t n_embd, uint64_t seed,
                                 uint64_t stream) {
  std::vector<float> logits(static_cast<size_t>(kSamples) * n_expert);
  std::vector<float> h(n_embd);
  for (int t = 0; t < kSamples; ++t) {
    Rng r = Rng::for_block(seed, stream, static_cast<uint64_t>(t));
    for (float& v : h) v = static_cast<float>(r.normal());
    for (uint32_t e = 0; e < n_expert; ++e) {
      const float* row = rows.data() + static_cast<size_t>(e) * n_embd;
      double dot = 0;
      for (uint32_t i = 0; i < n_embd; ++i) dot += static_cast<double>(row[i]) * static_cast<double>(h[i]);
      logits[static_cast<size_t>(t) * n_expert + e] = static_cast<float>(dot);
    }
  }
  return logits;
}

// Share of samples that route to each expert (top k of the scaled logits).
std::vector<double> shares(const std::vector<float>& logits, const std::vector<float>& scale, uint32_t k) {
  const size_t n_expert = scale.size();
  std::vector<double> count(n_expert, 0.0);
  std::vector<uint32_t> order(n_expert);
  std::vector<float> scaled(n_expert);
  for (int t = 0; t < kSamples; ++t) {
    for (size_t e = 0; e < n_expert; ++e) scaled[e] = logits[static_cast<size_t>(t) * n_expert + e] * scale[e];
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](uint32_t a, uint32_t b) { return scaled[a] > scaled[b]; });
    for (uint32_t j = 0; j < k; ++j) count[order[j]] += 1.0;
  }
  for (double& c : count) c /= kSamples;
  return count;
}

// k * w_r / sum(w) with w_r = 1 / (r + 1)^S, capped at kMaxShare with the excess spread over the uncapped ranks.
std::vector<double> target_shares(double exponent, size_t n_expert, uint32_t k) {
  std::vector<double> w(n_expert);
  for (size_t r = 0; r < n_expert; ++r) w[r] = 1.0 / std::pow(static_cast<double>(r + 1), exponent);
  std::vector<double> target(n_expert, 0.0);
  std::vector<bool> capped(n_expert, false);
  double budget = k;
  for (bool changed = true; changed;) {
    changed = false;
    double free_weight = 0;
    for (size_t r = 0; r < n_expert; ++r) {
      if (!capped[r]) free_weight += w[r];
    }
    for (size_t r = 0; r < n_expert; ++r) {
      if (capped[r]) continue;
      target[r] = budget * w[r] / free_weight;
      if (target[r] > kMaxShare) {
        capped[r] = true;
        target[r] = kMaxShare;
        budget -= kMaxShare;
        changed = true;
        break;
      }
    }
  }
  return target;
}

}  // namespace

std::vector<uint32_t> experts_by_rank(uint64_t seed, uint32_t layer, uint32_t n_expert) {
  std::vector<uint32_t> order(n_expert);
  std::iota(order.begin(), order.end(), 0u);
  Rng r = Rng::for_block(seed, kPermutationStream, layer);
  for (uint32_t i = n_expert; i > 1; --i) std::swap(order[i - 1], order[r.next() % i]);
  return order;
}

RouterSkew calibrate_router_skew(double exponent, uint32_t n_expert_used, uint32_t n_embd,
                                 const std::vector<float>& rows, uint64_t seed) {
  const auto n_expert = static_cast<uint32_t>(rows.size() / n_embd);
  // The rows given are layer 0's; rank r lives in expert experts_by_rank(seed, 0)[r].
  const std::vector<uint32_t> expert_of_rank = experts_by_rank(seed, 0, n_expert);
  RouterSkew out;
  out.report.target = target_shares(exponent, n_expert, n_expert_used);
  std::vector<float> scale(n_expert, 1.0f);  // by expert
  const std::vector<float> logits = sample_logits(rows, n_expert, n_embd, seed, kCalibrationStream);
  const double floor = 0.5 / kSamples;
  for (int it = 0; it < kIterations; ++it) {
    const std::vector<double> got = shares(logits, scale, n_expert_used);
    for (uint32_t r = 0; r < n_expert; ++r) {
      const uint32_t e = expert_of_rank[r];
      const double step = 0.5 * std::log(out.report.target[r] / std::max(got[e], floor));
      scale[e] = std::clamp(scale[e] * static_cast<float>(std::exp(step)), 1.0f / kMaxScale, kMaxScale);
    }
    // Only ratios matter for the top k; keep the mean square at 1 so logits keep their unskewed size.
    double mean_sq = 0;
    for (float s : scale) mean_sq += static_cast<double>(s) * static_cast<double>(s);
    const auto norm = static_cast<float>(std::sqrt(mean_sq / n_expert));
    for (float& s : scale) s /= norm;
  }
  const std::vector<double> check =
      shares(sample_logits(rows, n_expert, n_embd, seed, kCheckStream), scale, n_expert_used);
  out.scale_by_rank.resize(n_expert);
  out.report.achieved.resize(n_expert);
  for (uint32_t r = 0; r < n_expert; ++r) {
    out.scale_by_rank[r] = scale[expert_of_rank[r]];
    out.report.achieved[r] = check[expert_of_rank[r]];
  }
  return out;
}

}  // namespace strata::mkmodel
