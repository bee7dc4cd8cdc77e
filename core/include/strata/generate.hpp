// Text generation on an engine slot: encode the prompt, feed it, then sample and feed one token at a time,
// streaming the text as it becomes final. generate() is `strata run`'s (a raw text prompt, the slot started
// afresh); complete() is the token-level loop under it that the server and `run --chat` call (prompt ids in,
// the slot's cached prefix reused, a callback per token that can stop it, log-probabilities when asked).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/engine.hpp"
#include "strata/sampling.hpp"
#include "strata/speculative.hpp"
#include "strata/tokenizer.hpp"

namespace strata {

// An image inside a prompt (Qwen3-VL): its nx x ny tokens stand at prompt[at, at + nx x ny) as placeholders (any
// valid id) and are fed as the projector's rows (Engine::feed_image). The rows belong to the caller.
struct PromptImage {
  size_t at = 0;
  Engine::ImageTokens tokens;
};

struct GenerateOptions {
  int n_predict = 256;  // tokens to generate; -1 = until end of text or the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings (not included in the text)
  Draft* draft = nullptr;         // speculative decoding (CompletionOptions::draft)
  uint32_t draft_n_max = 0;
  // Images (Qwen3-VL), in the order of the prompt's "<__media__>" markers (all at the start, after BOS, when the
  // prompt has none): each becomes <|vision_start|>, its tokens, <|vision_end|>.
  std::vector<Engine::ImageTokens> images;
};

struct GenerateResult {
  std::vector<TokenId> prompt_ids;     // as fed: BOS first where the vocabulary adds one
  std::vector<TokenId> generated_ids;  // sampled tokens, without a final end-of-text token
  std::string prompt_text;             // the prompt as its tokens decode (what run.c prints for it)
  std::string text;                    // the generated text, up to a stop string
  std::string stop_reason;             // "n_predict", "eos", "stop string" or "context"
  double prompt_seconds = 0.0;         // feeding the prompt
  double decode_seconds = 0.0;         // feeding the generated tokens
  size_t decode_tokens = 0;            // generated tokens fed back (the last one sampled is not)
  DraftStats draft;                    // speculative decoding's counts (zero without a draft)
};

struct TokenLogprob {
  TokenId id = kNoToken;
  float logprob = 0.0f;
};

// One step of complete() as its caller sees it.
struct GeneratedToken {
  // kNoToken for the last call, which carries only the text held back until the end (a partial UTF-8 sequence,
  // the start of a stop string that never completed); it may be empty.
  TokenId id = kNoToken;
  std::string text;  // text this token makes final (may be empty: held back for UTF-8 or a stop string)
  // With CompletionOptions::logprobs: the token's log-probability under the model (softmax of the raw logits,
  // before the penalty, the cuts and the temperature), and the likeliest top_logprobs tokens, likeliest first.
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
  // Speculative decoding: this token was a draft the model accepted, so the running verify window goes on (its
  // next row is verified next). False when the window ends here (or there is none): a boundary between windows.
  bool mid_window = false;
};

enum class StopCause {
  EndOfText,   // an end token was sampled (it is not part of the output)
  StopString,  // a stop string appeared (the text ends before it)
  MaxTokens,   // max_tokens were generated
  Context,     // the slot's context is full
  Cancelled,   // the callback returned false
};

// OpenAI's finish_reason: "stop" (end of text, stop string), "length" (max_tokens, context) or "cancelled".
std::string_view finish_reason(StopCause cause);

struct CompletionOptions {
  int max_tokens = 256;  // -1 = until an end token or the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings (not included in the text)
  std::vector<TokenId> end_tokens;  // tokens that end the reply besides the vocabulary's EOS (<|im_end|>, ...)
  bool logprobs = false;
  int top_logprobs = 0;  // with logprobs: how many alternatives each step reports
  bool strip_leading_space = false;  // drop the reply's leading space (run.c's printing after BOS alone)
  // Speculative decoding: with a draft and draft_n_max > 0, each decode step is a verify window of the pending
  // token and up to draft_n_max drafted ones (Completion::advance). The ids are the same as without (greedy), or
  // distributed the same (sampling). The draft is the caller's and must outlive the completion.
  Draft* draft = nullptr;
  uint32_t draft_n_max = 0;
  // Images inside the prompt, ascending `at`. A `reuse` that takes in images must come from comparing keyed
  // prompts (strata/prompt_images.hpp: placeholders keyed by the image's bytes); one that ends inside an image is
  // cut back to its start.
  std::vector<PromptImage> images;
};

struct CompletionResult {
  std::vector<TokenId> generated_ids;  // sampled tokens, without a final end token
  std::string text;                    // the generated text, up to a stop string
  StopCause stop = StopCause::MaxTokens;
  size_t reused_tokens = 0;            // prompt positions the slot already held (not fed again)
  double prompt_seconds = 0.0;         // feeding the prompt's new tokens
  double decode_seconds = 0.0;         // feeding the generated tokens
  size_t decode_tokens = 0;            // generated tokens fed back (the last one sampled is not)
  DraftStats draft;                    // speculative decoding's counts (zero without a draft)
};

// Generates after `prompt` (ids as fed, BOS included) on `slot`, whose first `reuse` positions already hold
// prompt[0, reuse): the slot is cut there and only the rest is fed. At least the prompt's last token is always
// fed (its logits start the reply), so reuse is capped at prompt.size() - 1 and at the slot's length. on_token is
// called for every sampled token that is kept (not an end token) and once more at the end (id kNoToken) with
// the text held back; returning false stops at once with StopCause::Cancelled. Throws strata::Error for an
// empty prompt or one that does not fit the context.
CompletionResult complete(Engine& engine, uint32_t slot, std::span<const TokenId> prompt, size_t reuse,
                          const CompletionOptions& options,
                          const std::function<bool(const GeneratedToken&)>& on_token = {});

// One sequence's reply as a state machine, so that several sequences can share an engine's decode steps
// (complete_together) while complete() drives one alone; both give a sequence the same ids and text. The caller
// feeds the prompt (from reused() on) and then, while next() returns a token, feeds that token.
class Completion {
 public:
  // Checks the prompt against the context (strata::Error for an empty one or one that does not fit) and notes how
  // many of its positions `slot` already holds (see complete()); the caller cuts the slot there.
  Completion(const Engine& engine, uint32_t slot, std::span<const TokenId> prompt, size_t reuse,
             const CompletionOptions& options, std::function<bool(const GeneratedToken&)> on_token = {});
  uint32_t slot() const { return slot_; }
  size_t reused() const { return r_.reused_tokens; }
  // Cuts the slot to the reused prefix, feeds the rest of the prompt there (timed) and returns next()'s first
  // token. `engine` is the one the completion was made for.
  TokenId begin(Engine& engine);
  // Takes the logits after the last fed token (the prompt's, then each token next() returned) and returns the
  // token to feed next, or kNoToken once the reply is done (result() is then final).
  TokenId next(std::span<const float> logits);
  // Feeds `pending` (the token begin(), next() or advance() returned) and returns the token to feed next, or
  // kNoToken: without a draft (or room for one), next() after a one-token feed. With one: a verify window of
  // `pending` and the draft's proposals (at most options.draft_n_max, what the context and max_tokens leave),
  // next() at each position in turn (the sampler verifying the proposal, Sampler::verify) while the proposals
  // hold; the rejected positions are cut from the slot (and the draft told). The ids, the callbacks and the
  // slot's contents at the end are next()'s after one-token feeds.
  TokenId advance(Engine& engine, TokenId pending);
  std::span<const TokenId> history() const { return history_; }
  bool done() const { return done_; }
  const CompletionResult& result() const { return r_; }

 private:
  std::string release(std::string text);
  void finish(StopCause cause);
  // next(), the sampler verifying `draft` (kNoToken: none), with the slot `position` tokens long as one-token
  // feeds would leave it.
  TokenId next_at(std::span<const float> logits, TokenId draft, uint32_t position);
  const Engine& engine_;
  uint32_t slot_;
  CompletionOptions options_;
  std::function<bool(const GeneratedToken&)> on_token_;
  Sampler sampler_;
  StreamDecoder stream_;
  StopStrings stops_;
  bool strip_space_;
  std::vector<TokenId> history_;
  size_t prompt_size_;
  CompletionResult r_;
  int sampled_ = 0;
  bool done_ = false;
  std::chrono::steady_clock::time_point decode_start_{};
};

// One sequence of complete_together().
struct SequenceRequest {
  uint32_t slot = 0;
  std::vector<TokenId> prompt;
  size_t reuse = 0;
  CompletionOptions options;
  std::function<bool(const GeneratedToken&)> on_token;
};

// Generates for several sequences at once (runtime.slots): each prompt is fed on its own slot, one after the
// other; then every unfinished sequence's next token goes into one decode step (Engine::step), and a finished one
// leaves the next step at once. Each sequence's ids and text are what complete() gives it alone. The slots must
// be distinct.
std::vector<CompletionResult> complete_together(Engine& engine, std::span<const SequenceRequest> sequences);

// Starts `slot` afresh (cut to 0), encodes `prompt` with BOS and the vocabulary's dummy-prefix space, and
// generates. on_text receives the generated text piece by piece (valid UTF-8, stop strings held back).
// An empty prompt starts from BOS alone, and the first generated piece then loses its dummy-prefix space,
// as llama2.c's run.c prints it.
GenerateResult generate(Engine& engine, uint32_t slot, std::string_view prompt, const GenerateOptions& options,
                        const std::function<void(std::string_view)>& on_text = {});

}  // namespace strata
