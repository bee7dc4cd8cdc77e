// Text generation on an engine slot: encode the prompt, feed it, then sample and feed one token at a time,
// streaming the text as it becomes final.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/engine.hpp"
#include "strata/sampling.hpp"

namespace strata {

struct GenerateOptions {
  int n_predict = 256;  // tokens to generate; -1 = until end of text or the context is full
  SamplingParams sampling;
  std::vector<std::string> stop;  // stop strings (not included in the text)
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
};

// Starts `slot` afresh (cut to 0), encodes `prompt` with BOS and the vocabulary's dummy-prefix space, and
// generates. on_text receives the generated text piece by piece (valid UTF-8, stop strings held back).
// An empty prompt starts from BOS alone, and the first generated piece then loses its dummy-prefix space,
// as llama2.c's run.c prints it.
GenerateResult generate(Engine& engine, uint32_t slot, std::string_view prompt, const GenerateOptions& options,
                        const std::function<void(std::string_view)>& on_text = {});

}  // namespace strata
