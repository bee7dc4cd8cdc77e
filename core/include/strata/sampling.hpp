// Choosing the next token from a window's logits: greedy, or a seeded draw after a logit bias, penalties and
// top-k, top-p and min-p cuts, at a temperature; and stopping on end-of-text or stop strings.
//
// The order is llama.cpp's default sampler chain: logit bias, penalties (repetition, then OpenAI's frequency and
// presence), top-k, top-p, min-p (the last two on the probabilities at temperature 1), temperature, draw.
// Temperature 0 is greedy (the first of the largest logits, after the bias and the penalties). Same logits,
// parameters and seed: the same token, on every machine.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/config.hpp"
#include "strata/tokenizer.hpp"

namespace strata {

struct SamplingParams {
  float temperature = 0.0f;   // 0 = greedy
  int top_k = 0;              // keep the k likeliest (0 = off)
  float top_p = 1.0f;         // keep the smallest set whose probability reaches p (1 = off)
  float min_p = 0.0f;         // drop tokens less likely than min_p times the likeliest (0 = off)
  float repeat_penalty = 1.0f;  // divide positive (multiply negative) logits of recent tokens (1 = off)
  int repeat_last_n = 64;     // how many recent tokens the penalty looks at (0 = none)
  // OpenAI's: logit[t] -= count[t] * frequency_penalty + (count[t] > 0) * presence_penalty, count[t] being how
  // often t was drawn so far in this reply (the prompt does not count). 0 = off.
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  // OpenAI's logit_bias: added to the token's logit before anything else (-100 bans it, +100 all but forces it).
  // Sorted by id, one entry per id.
  std::vector<std::pair<TokenId, float>> logit_bias;
  // Test hook only (the server's STRATA_TEST_FORCED_REPLY): the first draws return these ids in order, whatever
  // the logits; sampling proper takes over after them.
  std::vector<TokenId> forced;
  uint64_t seed = 1;
};

// The launch's sampling section.
SamplingParams sampling_from(const config::SamplingConfig& s);

namespace sampling {

struct Candidate {
  TokenId id;
  float logit;
  double p = 0.0;  // probability among the candidates still in (after softmax)
};

// Adds each bias to its token's logit (ids outside the logits are skipped).
void apply_logit_bias(std::vector<float>& logits, std::span<const std::pair<TokenId, float>> bias);
// OpenAI's frequency and presence penalties, from how often each token was drawn (counts[t], sorted by id).
void apply_frequency_presence(std::vector<float>& logits, const std::map<TokenId, int>& counts, float frequency,
                              float presence);
// The penalty over the distinct tokens among the last `last_n` of `history`.
void apply_repeat_penalty(std::vector<float>& logits, std::span<const TokenId> history, float penalty, int last_n);
// All tokens, by logit descending (ties: lower id first).
std::vector<Candidate> sorted_candidates(std::span<const float> logits);
// The cuts, on candidates sorted by logit descending. Each keeps at least one candidate.
void top_k(std::vector<Candidate>& c, int k);
void softmax(std::vector<Candidate>& c, float temperature);  // fills p
void top_p(std::vector<Candidate>& c, float p);              // needs p filled; renormalises
void min_p(std::vector<Candidate>& c, float p);              // needs p filled; renormalises
// The first index whose cumulative probability exceeds u in [0, 1).
size_t draw(const std::vector<Candidate>& c, double u);
// The first of the largest logits.
TokenId argmax(std::span<const float> logits);

}  // namespace sampling

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // The next token, given the logits (n_vocab) and the tokens so far (prompt and generated). A sampler is one
  // reply's: the frequency and presence penalties count the tokens it has returned.
  TokenId sample(std::span<const float> logits, std::span<const TokenId> history);
  // Speculative decoding: the next token where a draft proposed `draft` (a deterministic draft: its q is one-hot).
  // Greedy: what sample() returns (the draft stands when it is the argmax). Sampling: the draft with probability
  // min(1, p/q) = p(draft) under this sampler's distribution p (after the bias, penalties, cuts and temperature),
  // else a draw from the residual max(0, p - q) normalised, i.e. p without the draft; the returned token is
  // distributed as p. Same logits, parameters, seed and drafts: the same tokens.
  TokenId verify(std::span<const float> logits, std::span<const TokenId> history, TokenId draft);
  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  TokenId choose(std::span<const float> logits, std::span<const TokenId> history);
  void penalised(std::vector<float>& logits, std::span<const TokenId> history) const;
  std::vector<sampling::Candidate> candidates(std::vector<float>& logits) const;
  double uniform();
  std::mt19937_64 rng_;
  std::map<TokenId, int> drawn_;  // how often each token was returned
  size_t n_drawn_ = 0;
};

// Watches generated text for stop strings. push() returns the text that can be shown now: text that might be
// the start of a stop string is held back until it cannot be; once a stop string appears, the text before it is
// released and stopped() is true. finish() releases what is held when generation ends another way.
class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);
  std::string push(std::string_view text);
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace strata
