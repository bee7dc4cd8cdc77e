#include <vector>

#include "strata/sampling.hpp"

namespace strata {

SamplingParams sampling_from(const config::SamplingConfig& s) {
  SamplingParams p;
  p.temperature = static_cast<float>(s.temperature);
  p.top_k = s.top_k;
  p.top_p = static_cast<float>(s.top_p);
  p.min_p = static_cast<float>(s.min_p);
  p.repeat_penalty = static_cast<float>(s.repeat_penalty);
  p.repeat_last_n = s.repeat_last_n;
  p.seed = static_cast<uint64_t>(s.seed);
  return p;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
  const TokenId id = choose(logits, history);
  ++drawn_[id];
  ++n_drawn_;
  return id;
}

std::vector<sampling::Candidate> Sampler::candidates(std::vector<float>& l) const {
  std::vector<sampling::Candidate> c = sampling::sorted_candidates(l);
  sampling::top_k(c, params_.top_k);
  sampling::softmax(c, 1.0f);
  sampling::top_p(c, params_.top_p);
  sampling::min_p(c, params_.min_p);
  sampling::softmax(c, params_.temperature);
  return c;
}

void Sampler::penalised(std::vector<float>& l, std::span<const TokenId> history) const {
  sampling::apply_logit_bias(l, params_.logit_bias);
  sampling::apply_repeat_penalty(l, history, params_.repeat_penalty, params_.repeat_last_n);
  sampling::apply_frequency_presence(l, drawn_, params_.frequency_penalty, params_.presence_penalty);
}

double Sampler::uniform() {
  // 53 random bits as a double in [0, 1): the same on every standard library.
  return static_cast<double>(rng_() >> 11) * 0x1p-53;
}

TokenId Sampler::choose(std::span<const float> logits, std::span<const TokenId> history) {
  if (n_drawn_ < params_.forced.size()) return params_.forced[n_drawn_];
  std::vector<float> l(logits.begin(), logits.end());
  penalised(l, history);
  if (params_.temperature <= 0.0f) return sampling::argmax(l);
  const std::vector<sampling::Candidate> c = candidates(l);
  return c[sampling::draw(c, uniform())].id;
}

TokenId Sampler::verify(std::span<const float> logits, std::span<const TokenId> history, TokenId draft) {
  TokenId id;
  if (n_drawn_ < params_.forced.size() || params_.temperature <= 0.0f) {
    id = choose(logits, history);  // greedy: the draft stands when it is the argmax
  } else {
    std::vector<float> l(logits.begin(), logits.end());
    penalised(l, history);
    std::vector<sampling::Candidate> c = candidates(l);
    // q is one-hot on the draft: accept with probability min(1, p/q) = p.
    double p_draft = 0.0;
    for (const sampling::Candidate& x : c) {
      if (x.id == draft) p_draft = x.p;
    }
    if (uniform() < p_draft) {
      id = draft;
    } else {
      // The residual max(0, p - q), normalised: p without the draft.
      std::erase_if(c, [&](const sampling::Candidate& x) { return x.id == draft; });
      double total = 0.0;
      for (const sampling::Candidate& x : c) total += x.p;
      if (c.empty() || total <= 0.0) {
        id = draft;  // p was all on the draft (u rounding): nothing else to draw
      } else {
        for (sampling::Candidate& x : c) x.p /= total;
        id = c[sampling::draw(c, uniform())].id;
      }
    }
  }
  ++drawn_[id];
  ++n_drawn_;
  return id;
}

}  // namespace strata
