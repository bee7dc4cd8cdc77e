#include "strata/generate.hpp"

#include <chrono>

#include "strata/error.hpp"

namespace strata {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

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

  engine.cut(slot, 0);
  const uint32_t n_ctx = engine.settings().context;
  if (r.prompt_ids.size() >= n_ctx) {
    throw Error("the prompt has " + std::to_string(r.prompt_ids.size()) + " tokens; runtime.context is " +
                std::to_string(n_ctx));
  }
  auto t0 = std::chrono::steady_clock::now();
  std::span<const float> logits = engine.feed(slot, r.prompt_ids);
  r.prompt_seconds = seconds_since(t0);

  Sampler sampler(options.sampling);
  StreamDecoder stream(tok);
  StopStrings stops(options.stop);
  bool strip_space = prompt_tokens.empty() && tok.add_space_prefix();
  std::vector<TokenId> history = r.prompt_ids;
  const auto emit = [&](std::string text) {
    if (strip_space && !text.empty()) {
      if (text.front() == ' ') text.erase(0, 1);
      strip_space = false;
    }
    const std::string shown = stops.push(text);
    r.text += shown;
    if (on_text && !shown.empty()) on_text(shown);
  };

  r.stop_reason = "n_predict";
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; options.n_predict < 0 || i < options.n_predict; ++i) {
    const TokenId next = sampler.sample(logits, history);
    if (next == tok.eos()) {
      r.stop_reason = "eos";
      break;
    }
    r.generated_ids.push_back(next);
    history.push_back(next);
    emit(stream.push(next));
    if (stops.stopped()) {
      r.stop_reason = "stop string";
      break;
    }
    const bool last = options.n_predict >= 0 && i + 1 == options.n_predict;
    if (last) break;
    if (engine.position(slot) >= n_ctx) {
      r.stop_reason = "context";
      break;
    }
    logits = engine.feed(slot, std::span<const TokenId>(&r.generated_ids.back(), 1));
    ++r.decode_tokens;
  }
  r.decode_seconds = seconds_since(t0);
  if (!stops.stopped()) {
    emit(stream.finish());
    const std::string rest = stops.finish();
    r.text += rest;
    if (on_text && !rest.empty()) on_text(rest);
  }
  return r;
}

}  // namespace strata
