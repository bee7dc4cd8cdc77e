// One prompt of a gate: encoded as `strata run` encodes it, cut to fit the context with room for the generated
// tokens, then plain argmax (no sampler, no penalty: the launch's sampling section cannot change a gate).
#include <algorithm>

#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "strata/sampling.hpp"

namespace strata::gate {

Case run_case(Engine& engine, const Prompt& prompt, int n_predict, size_t keep) {
  if (n_predict < 1) throw Error("a gate generates at least 1 token per prompt (-n " + std::to_string(n_predict) + ")");
  const Tokenizer& tok = engine.model().tokenizer();
  Case c;
  c.name = prompt.name;
  c.text = prompt.text;
  c.prompt_ids = tok.encode(prompt.text, {.add_bos = true, .add_eos = false, .parse_special = false});
  if (c.prompt_ids.empty()) {
    throw Error("prompt '" + prompt.name + "' encodes to no tokens and the vocabulary adds no BOS; give it some text");
  }
  const size_t context = engine.settings().context;
  const auto n = static_cast<size_t>(n_predict);
  if (n >= context) {
    throw Error("-n " + std::to_string(n) + " leaves no room for a prompt in runtime.context " +
                std::to_string(context) + "; lower -n or raise the context (-o runtime.context=" +
                std::to_string(n + 512) + ")");
  }
  // The prompt and every generated token but the last are fed: prompt + n <= context always fits.
  size_t limit = context - n;
  if (keep > 0) limit = std::min(limit, keep);
  if (c.prompt_ids.size() > limit) {
    c.cut_from = c.prompt_ids.size();
    c.prompt_ids.resize(limit);
  }

  engine.cut(0, 0);
  std::span<const float> logits = engine.feed(0, c.prompt_ids);
  c.stop = "n_predict";
  for (size_t i = 0; i < n; ++i) {
    const TokenId next = sampling::argmax(logits);
    if (next == tok.eos()) {
      c.stop = "eos";
      break;
    }
    c.ids.push_back(next);
    if (i + 1 < n) logits = engine.feed(0, std::span<const TokenId>(&c.ids.back(), 1));
  }
  engine.cut(0, 0);
  return c;
}

}  // namespace strata::gate
