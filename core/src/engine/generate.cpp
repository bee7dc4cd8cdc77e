#include "strata/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "strata/error.hpp"
#include "strata/prompt_images.hpp"
#include "strata/startup_clock.hpp"
#include "strata/steady_seconds.hpp"

namespace strata {
namespace {

// log-softmax of the raw logits at `id`, and the `top` likeliest tokens (ties: lower id first).
void fill_logprobs(std::span<const float> logits, TokenId id, int top, GeneratedToken& out) {
  float max_logit = logits[0];
  for (float l : logits) max_logit = std::max(max_logit, l);
  double total = 0.0;
  for (float l : logits) total += std::exp(static_cast<double>(l - max_logit));
  const double log_total = std::log(total) + static_cast<double>(max_logit);
  const auto logprob = [&](TokenId t) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(t)]) - log_total);
  };
  out.logprob = logprob(id);
  if (top <= 0) return;
  std::vector<TokenId> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TokenId>(i);
  const size_t n = std::min(ids.size(), static_cast<size_t>(top));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), [&](TokenId a, TokenId b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  out.top.reserve(n);
  for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i])});
}

}  // namespace

std::string_view finish_reason(StopCause cause) {
  switch (cause) {
    case StopCause::EndOfText:
    case StopCause::StopString:
      return "stop";
    case StopCause::MaxTokens:
    case StopCause::Context:
      return "length";
    case StopCause::Cancelled:
      return "cancelled";
  }
  return "stop";
}

Completion::Completion(const Engine& engine, uint32_t slot, std::span<const TokenId> prompt, size_t reuse,
                       const CompletionOptions& options, std::function<bool(const GeneratedToken&)> on_token)
    : engine_(engine),
      slot_(slot),
      options_(options),
      on_token_(std::move(on_token)),
      sampler_(options.sampling),
      stream_(engine.model().tokenizer()),
      stops_(options.stop),
      strip_space_(options.strip_leading_space),
      history_(prompt.begin(), prompt.end()),
      prompt_size_(prompt.size()) {
  if (prompt.empty()) throw Error("the prompt has no tokens");
  const uint32_t n_ctx = engine.settings().context;
  if (prompt.size() >= n_ctx) {
    throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens; runtime.context is " +
                std::to_string(n_ctx));
  }
  // At least the prompt's last token is fed: its logits start the reply. An image is fed again whole.
  r_.reused_tokens = std::min({reuse, prompt.size() - 1, static_cast<size_t>(engine.position(slot))});
  size_t end = 0;
  for (const PromptImage& im : options.images) {
    const size_t n = size_t{im.tokens.nx} * im.tokens.ny;
    if (im.at < end || im.at + n > prompt.size() || n == 0) {
      throw Error("an image at prompt position " + std::to_string(im.at) + " with " + std::to_string(n) +
                  " tokens does not fit a prompt of " + std::to_string(prompt.size()) + " ids after the previous image");
    }
    end = im.at + n;
  }
  // A reused prefix may hold whole images (the caller compared keyed_prompt()s): one that ends inside an image is
  // cut back to the image's start, and the image is fed again whole.
  for (const PromptImage& im : options.images) {
    const size_t n = size_t{im.tokens.nx} * im.tokens.ny;
    if (r_.reused_tokens > im.at && r_.reused_tokens < im.at + n) r_.reused_tokens = im.at;
  }
  r_.stop = StopCause::MaxTokens;
}

TokenId Completion::begin(Engine& engine) {
  engine.cut(slot_, static_cast<uint32_t>(reused()));
  const auto t0 = std::chrono::steady_clock::now();
  // The text between images through feed, each image through feed_image.
  std::span<const float> logits;
  size_t at = reused();
  for (const PromptImage& im : options_.images) {
    if (im.at < at) continue;  // held by the reused prefix
    if (im.at > at) logits = engine.feed(slot_, std::span<const TokenId>(history_.data() + at, im.at - at));
    logits = engine.feed_image(slot_, im.tokens);
    at = im.at + size_t{im.tokens.nx} * im.tokens.ny;
  }
  if (at < prompt_size_) logits = engine.feed(slot_, std::span<const TokenId>(history_.data() + at, prompt_size_ - at));
  r_.prompt_seconds += seconds_since(t0);
  const TokenId first = next(logits);
  // The process's first token: after every part of the prompt (text, images, text), not after its first part.
  startup::mark_first_token();
  return first;
}

// The text a new piece makes final: the leading space dropped once when asked, stop strings held back.
std::string Completion::release(std::string text) {
  if (strip_space_ && !text.empty()) {
    if (text.front() == ' ') text.erase(0, 1);
    strip_space_ = false;
  }
  std::string shown = stops_.push(text);
  r_.text += shown;
  return shown;
}

void Completion::finish(StopCause cause) {
  r_.stop = cause;
  r_.decode_seconds = seconds_since(decode_start_);
  done_ = true;
  if (cause == StopCause::StopString || cause == StopCause::Cancelled) return;
  GeneratedToken tail;
  tail.text = release(stream_.finish());
  const std::string rest = stops_.finish();
  r_.text += rest;
  tail.text += rest;
  if (on_token_) on_token_(tail);
}

TokenId Completion::next(std::span<const float> logits) {
  return next_at(logits, kNoToken, engine_.position(slot_));
}

TokenId Completion::advance(Engine& engine, TokenId pending) {
  if (done_) throw Error("internal: advance() on a finished completion");
  const uint32_t base = engine.position(slot_);
  uint32_t k = 0;
  std::vector<TokenId> drafts;
  if (options_.draft != nullptr && options_.draft_n_max > 0) {
    // Room: the window fits the context and the rows it verifies are samples still to draw (a window of k + 1
    // tokens draws k + 1).
    const uint32_t n_ctx = engine.settings().context;
    int64_t room = static_cast<int64_t>(n_ctx) - static_cast<int64_t>(base) - 1;
    room = std::min<int64_t>(room, static_cast<int64_t>(engine.settings().max_window_logits) - 1);
    if (options_.max_tokens >= 0) room = std::min<int64_t>(room, options_.max_tokens - sampled_ - 1);
    room = std::min<int64_t>(room, options_.draft_n_max);
    if (room > 0) {
      drafts = options_.draft->propose(history_, static_cast<uint32_t>(room));
      if (drafts.size() > static_cast<size_t>(room)) drafts.resize(static_cast<size_t>(room));
      k = static_cast<uint32_t>(drafts.size());
    }
  }
  if (k == 0) return next(engine.feed(slot_, std::span<const TokenId>(&pending, 1)));
  std::vector<TokenId> window;
  window.reserve(k + 1);
  window.push_back(pending);
  window.insert(window.end(), drafts.begin(), drafts.end());
  const std::span<const float> logits = engine.feed_window(slot_, window);
  const size_t n_vocab = engine.model().hparams().n_vocab;
  uint32_t accepted = 0;
  TokenId out = kNoToken;
  for (uint32_t j = 0; j <= k; ++j) {
    const TokenId d = j < k ? drafts[j] : kNoToken;
    out = next_at(logits.subspan(static_cast<size_t>(j) * n_vocab, n_vocab), d, base + j + 1);
    if (out == kNoToken || j == k || out != d) break;
    ++accepted;  // window[j + 1] stands: its logits are the next row's
  }
  // The slot keeps the pending token and the accepted drafts.
  engine.cut(slot_, base + 1 + accepted);
  options_.draft->truncate(base + 1 + accepted);
  options_.draft->feedback(k, accepted);
  ++r_.draft.windows;
  r_.draft.drafted += k;
  r_.draft.accepted += accepted;
  return out;
}

TokenId Completion::next_at(std::span<const float> logits, TokenId draft, uint32_t position) {
  if (done_) throw Error("internal: next() on a finished completion");
  if (sampled_ == 0) decode_start_ = std::chrono::steady_clock::now();
  const Tokenizer& tok = engine_.model().tokenizer();
  if (options_.max_tokens >= 0 && sampled_ >= options_.max_tokens) {
    finish(StopCause::MaxTokens);
    return kNoToken;
  }
  const TokenId id = draft == kNoToken ? sampler_.sample(logits, history_) : sampler_.verify(logits, history_, draft);
  ++sampled_;
  if (id == tok.eos() || std::find(options_.end_tokens.begin(), options_.end_tokens.end(), id) != options_.end_tokens.end()) {
    finish(StopCause::EndOfText);
    return kNoToken;
  }
  r_.generated_ids.push_back(id);
  history_.push_back(id);
  GeneratedToken step;
  step.id = id;
  step.mid_window = draft != kNoToken && id == draft;
  step.text = release(stream_.push(id));
  if (options_.logprobs) fill_logprobs(logits, id, options_.top_logprobs, step);
  if (on_token_ && !on_token_(step)) {
    finish(StopCause::Cancelled);
    return kNoToken;
  }
  if (stops_.stopped()) {
    finish(StopCause::StopString);
    return kNoToken;
  }
  if (options_.max_tokens >= 0 && sampled_ == options_.max_tokens) {
    finish(StopCause::MaxTokens);
    return kNoToken;
  }
  if (position >= engine_.settings().context) {
    finish(StopCause::Context);
    return kNoToken;
  }
  ++r_.decode_tokens;  // the caller feeds it
  return id;
}

CompletionResult complete(Engine& engine, uint32_t slot, std::span<const TokenId> prompt, size_t reuse,
                          const CompletionOptions& options, const std::function<bool(const GeneratedToken&)>& on_token) {
  Completion c(engine, slot, prompt, reuse, options, on_token);
  for (TokenId id = c.begin(engine); id != kNoToken;) id = c.advance(engine, id);
  return c.result();
}

std::vector<CompletionResult> complete_together(Engine& engine, std::span<const SequenceRequest> sequences) {
  for (size_t i = 0; i < sequences.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (sequences[i].slot == sequences[j].slot) {
        throw Error("complete_together: sequences " + std::to_string(j) + " and " + std::to_string(i) +
                    " both use slot " + std::to_string(sequences[i].slot));
      }
    }
  }
  std::vector<std::unique_ptr<Completion>> seqs;
  std::vector<Engine::SlotToken> step;  // the unfinished sequences' next tokens
  std::vector<size_t> owner;            // which sequence each entry of `step` is
  for (size_t i = 0; i < sequences.size(); ++i) {
    const SequenceRequest& q = sequences[i];
    seqs.push_back(std::make_unique<Completion>(engine, q.slot, q.prompt, q.reuse, q.options, q.on_token));
    const TokenId id = seqs.back()->begin(engine);
    if (id != kNoToken) {
      step.push_back({q.slot, id});
      owner.push_back(i);
    }
  }
  const size_t n_vocab = engine.model().hparams().n_vocab;
  while (!step.empty()) {
    const std::span<const float> logits = engine.step(step);
    std::vector<Engine::SlotToken> next_step;
    std::vector<size_t> next_owner;
    for (size_t e = 0; e < step.size(); ++e) {
      const TokenId id = seqs[owner[e]]->next(logits.subspan(e * n_vocab, n_vocab));
      if (id == kNoToken) continue;  // finished: it leaves the next step
      next_step.push_back({step[e].slot, id});
      next_owner.push_back(owner[e]);
    }
    step = std::move(next_step);
    owner = std::move(next_owner);
  }
  std::vector<CompletionResult> out;
  for (const auto& c : seqs) out.push_back(c->result());
  return out;
}

GenerateResult generate(Engine& engine, uint32_t slot, std::string_view prompt, const GenerateOptions& options,
                        const std::function<void(std::string_view)>& on_text) {
  const Tokenizer& tok = engine.model().tokenizer();
  GenerateResult r;
  EncodeOptions enc;
  enc.add_eos = false;
  std::vector<PromptImage> images;
  if (options.images.empty()) {
    r.prompt_ids = tok.encode(prompt, enc);
  } else {
    r.prompt_ids = encode_with_images(tok, prompt, options.images, [&](std::string_view piece, bool first) {
      EncodeOptions text;
      text.add_bos = first;
      text.add_eos = false;
      return tok.encode(piece, text);
    }, images);
  }
  if (r.prompt_ids.empty()) throw Error("the prompt encodes to no tokens and the vocabulary adds no BOS");
  const bool starts_with_bos = tok.bos() != kNoToken && r.prompt_ids.front() == tok.bos();
  const std::span<const TokenId> prompt_tokens(r.prompt_ids.data() + (starts_with_bos ? 1 : 0),
                                               r.prompt_ids.size() - (starts_with_bos ? 1 : 0));
  r.prompt_text = tok.decode(prompt_tokens);

  CompletionOptions c;
  c.max_tokens = options.n_predict;
  c.sampling = options.sampling;
  c.stop = options.stop;
  c.strip_leading_space = prompt_tokens.empty() && tok.add_space_prefix();
  c.draft = options.draft;
  c.draft_n_max = options.draft_n_max;
  c.images = std::move(images);
  const CompletionResult done = complete(engine, slot, r.prompt_ids, 0, c, [&](const GeneratedToken& t) {
    if (on_text && !t.text.empty()) on_text(t.text);
    return true;
  });
  r.generated_ids = done.generated_ids;
  r.text = done.text;
  switch (done.stop) {
    case StopCause::EndOfText: r.stop_reason = "eos"; break;
    case StopCause::StopString: r.stop_reason = "stop string"; break;
    case StopCause::Context: r.stop_reason = "context"; break;
    case StopCause::MaxTokens:
    case StopCause::Cancelled: r.stop_reason = "n_predict"; break;
  }
  r.prompt_seconds = done.prompt_seconds;
  r.decode_seconds = done.decode_seconds;
  r.decode_tokens = done.decode_tokens;
  r.draft = done.draft;
  return r;
}

}  // namespace strata
