#include "strata/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "strata/error.hpp"

namespace strata {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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

CompletionResult complete(Engine& engine, uint32_t slot, std::span<const TokenId> prompt, size_t reuse,
                          const CompletionOptions& options, const std::function<bool(const GeneratedToken&)>& on_token) {
  const Tokenizer& tok = engine.model().tokenizer();
  if (prompt.empty()) throw Error("the prompt has no tokens");
  const uint32_t n_ctx = engine.settings().context;
  if (prompt.size() >= n_ctx) {
    throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens; runtime.context is " +
                std::to_string(n_ctx));
  }
  CompletionResult r;
  r.reused_tokens = std::min({reuse, prompt.size() - 1, static_cast<size_t>(engine.position(slot))});
  engine.cut(slot, static_cast<uint32_t>(r.reused_tokens));
  auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = engine.feed(slot, prompt.subspan(r.reused_tokens));
  r.prompt_seconds = seconds_since(t0);

  Sampler sampler(options.sampling);
  StreamDecoder stream(tok);
  StopStrings stops(options.stop);
  bool strip_space = options.strip_leading_space;
  std::vector<TokenId> history(prompt.begin(), prompt.end());
  const auto is_end = [&](TokenId id) {
    return id == tok.eos() ||
           std::find(options.end_tokens.begin(), options.end_tokens.end(), id) != options.end_tokens.end();
  };
  // The text a new piece makes final: the leading space dropped once when asked, stop strings held back.
  const auto release = [&](std::string text) {
    if (strip_space && !text.empty()) {
      if (text.front() == ' ') text.erase(0, 1);
      strip_space = false;
    }
    std::string shown = stops.push(text);
    r.text += shown;
    return shown;
  };

  r.stop = StopCause::MaxTokens;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; options.max_tokens < 0 || i < options.max_tokens; ++i) {
    const TokenId next = sampler.sample(logits, history);
    if (is_end(next)) {
      r.stop = StopCause::EndOfText;
      break;
    }
    r.generated_ids.push_back(next);
    history.push_back(next);
    GeneratedToken step;
    step.id = next;
    step.text = release(stream.push(next));
    if (options.logprobs) fill_logprobs(logits, next, options.top_logprobs, step);
    if (on_token && !on_token(step)) {
      r.stop = StopCause::Cancelled;
      break;
    }
    if (stops.stopped()) {
      r.stop = StopCause::StopString;
      break;
    }
    const bool last = options.max_tokens >= 0 && i + 1 == options.max_tokens;
    if (last) break;
    if (engine.position(slot) >= n_ctx) {
      r.stop = StopCause::Context;
      break;
    }
    logits = engine.feed(slot, std::span<const TokenId>(&r.generated_ids.back(), 1));
    ++r.decode_tokens;
  }
  r.decode_seconds = seconds_since(t0);
  if (r.stop != StopCause::StopString && r.stop != StopCause::Cancelled) {
    GeneratedToken tail;
    tail.text = release(stream.finish());
    const std::string rest = stops.finish();
    r.text += rest;
    tail.text += rest;
    if (on_token) on_token(tail);
  }
  return r;
}

GenerateResult generate(Engine& engine, uint32_t slot, std::string_view prompt, const GenerateOptions& options,
                        const std::function<void(std::string_view)>& on_text) {
  const Tokenizer& tok = engine.model().tokenizer();
  GenerateResult r;
  EncodeOptions enc;
  enc.add_eos = false;
  r.prompt_ids = tok.encode(prompt, enc);
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
  return r;
}

}  // namespace strata
