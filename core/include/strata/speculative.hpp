// Speculative decoding's drafts (speculative.draft in a launch). A draft proposes the tokens it expects to follow
// a sequence; the engine feeds the pending token and the proposals as one verify window (Engine::feed_window),
// every position's logits kept, and Completion::advance keeps the longest prefix that the sampler itself would
// have produced: the output is the one without speculation, id for id at temperature 0 (a window's logits are a
// one-token step's, bit for bit), and the model's distribution when sampling (see Sampler::verify).
//
// Sources:
//  - NgramDraft (`ngram`): prompt lookup. The longest recent suffix of the context (4 tokens down to 1) that
//    occurred earlier in the context proposes what followed it there. No model, no state.
//  - ModelDraft (`model`): a small GGUF with the same vocabulary, on its own engine (its own backend, KV cache
//    and one slot), proposing its own greedy continuation; how many tokens it proposes adapts to the acceptance
//    it sees.
//  - Room for a model's own MTP (nextn) layers: a third subclass holding a reference to the target engine, whose
//    propose() runs the nextn layers on the hidden state of the last accepted position (the engine would keep
//    that row of the verify window; feedback() says which row it is) and chains them for more than one token.
//    The interface needs nothing more: propose() sees the context, feedback() the acceptance, truncate() the cuts.
//
// Every draft is deterministic: a proposal is the draft's argmax (or a copy from the context), so its
// distribution q is one-hot on the proposed token, and the acceptance test min(1, p/q) is p.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/config.hpp"
#include "strata/tokenizer.hpp"

namespace strata {

class Engine;
class PluginRegistry;

class Draft {
 public:
  virtual ~Draft() = default;
  virtual std::string_view name() const = 0;  // "ngram", "model"
  // Up to n_max tokens proposed to follow `context`: the sequence so far (the prompt, the reply, and last the
  // pending token the verify window starts with), position i of the context at index i. May return fewer or none.
  virtual std::vector<TokenId> propose(std::span<const TokenId> context, uint32_t n_max) = 0;
  // Of the last proposal's `proposed` tokens, the first `accepted` were kept.
  virtual void feedback(size_t proposed, size_t accepted) {
    (void)proposed;
    (void)accepted;
  }
  // The sequence holds its first `length` positions only (rejected tokens cut, a new request): a draft with a
  // cache of its own forgets what follows.
  virtual void truncate(size_t length) { (void)length; }
  void reset() { truncate(0); }
};

// Prompt lookup: the longest suffix of the context, max_ngram tokens down to min_ngram, that occurred before
// (the most recent occurrence first) proposes the tokens that followed it.
class NgramDraft final : public Draft {
 public:
  explicit NgramDraft(uint32_t max_ngram = 4, uint32_t min_ngram = 1) : max_ngram_(max_ngram), min_ngram_(min_ngram) {}
  std::string_view name() const override { return "ngram"; }
  std::vector<TokenId> propose(std::span<const TokenId> context, uint32_t n_max) override;

 private:
  uint32_t max_ngram_, min_ngram_;
};

// A small model's greedy continuation, on its own engine (one slot, the target's context). The draft engine's
// KV cache follows the target's sequence: each propose() cuts it to the common prefix with the context and feeds
// the rest. The number proposed starts at n_max and follows the acceptance: a moving average of the accepted
// count plus two, at most n_max.
class ModelDraft final : public Draft {
 public:
  // `registry` keeps the backend plugin's library loaded (may be null for the reference backend).
  ModelDraft(std::unique_ptr<Engine> engine, std::unique_ptr<PluginRegistry> registry, uint32_t n_max);
  ~ModelDraft() override;
  std::string_view name() const override { return "model"; }
  std::vector<TokenId> propose(std::span<const TokenId> context, uint32_t n_max) override;
  void feedback(size_t proposed, size_t accepted) override;
  void truncate(size_t length) override;
  const Engine& engine() const { return *engine_; }
  uint32_t current_n() const { return n_cur_; }

 private:
  std::unique_ptr<PluginRegistry> registry_;  // first: destroyed after the engine
  std::unique_ptr<Engine> engine_;
  std::vector<TokenId> held_;  // what the draft engine's slot 0 holds
  uint32_t n_max_;
  uint32_t n_cur_;
  double mean_accepted_;
};

// "" when the two vocabularies are the same (size, every token's text, BOS and EOS), else the first difference.
std::string vocabulary_difference(const Tokenizer& target, const Tokenizer& draft);

// The launch's draft for an engine running `target` (null when speculative.draft is off). Throws strata::Error
// naming speculative.model when the draft model's vocabulary is not the target's, or it cannot be loaded.
std::unique_ptr<Draft> make_draft(const config::Launch& launch, const Engine& target);

// Counts of speculation over a reply (or a run).
struct DraftStats {
  uint64_t windows = 0;   // verify windows that carried at least one drafted token
  uint64_t drafted = 0;   // tokens proposed and fed
  uint64_t accepted = 0;  // of them, kept
  // Tokens each verify window gave: the accepted drafts plus the one the model chose after them.
  double mean_accepted_length() const {
    return windows ? static_cast<double>(accepted + windows) / static_cast<double>(windows) : 0.0;
  }
  DraftStats& operator+=(const DraftStats& o) {
    windows += o.windows;
    drafted += o.drafted;
    accepted += o.accepted;
    return *this;
  }
};

// "drafted D, accepted A (P%), mean accepted length L" for the summary lines.
std::string draft_summary(const DraftStats& s);

}  // namespace strata
