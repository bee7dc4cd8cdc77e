// One prompt of a gate: encoded as `strata run` encodes it, cut to fit the context with room for the generated
// tokens, then plain argmax (no sampler, no penalty: the launch's sampling section cannot change a gate).
#include <algorithm>

#include "strata/engine.hpp"
#include "strata/error.hpp"
#include "strata/gate.hpp"
#include "strata/prompt_images.hpp"
#include "strata/sampling.hpp"
#include "strata/sha256.hpp"
#include "strata/vision.hpp"

namespace strata::gate {

namespace {

vision::ImageSource read_image(const std::string& source, const std::string& what) {
  if (source != kBuiltinImage) return vision::read_image_source(source, what);
  vision::ImageSource s;
  s.bytes = builtin_image_bytes();
  s.image = vision::decode_image(s.bytes, kBuiltinImage);
  return s;
}

}  // namespace

Case run_case(Engine& engine, const Prompt& prompt, int n_predict, size_t keep, const vision::Projector* projector) {
  if (n_predict < 1) throw Error("a gate generates at least 1 token per prompt (-n " + std::to_string(n_predict) + ")");
  const Tokenizer& tok = engine.model().tokenizer();
  Case c;
  c.name = prompt.name;
  c.text = prompt.text;
  // Images: through the projector, placed as `strata run --image` places them.
  std::vector<vision::Embeddings> rows;
  std::vector<Engine::ImageTokens> image_tokens;
  std::vector<PromptImage> placed;
  if (!prompt.images.empty() && projector == nullptr) {
    throw Error("prompt '" + prompt.name + "' has images: give the model's vision projector (mmproj: in the launch, "
                "or -o mmproj=FILE)");
  }
  for (size_t k = 0; k < prompt.images.size(); ++k) {
    const vision::ImageSource source = read_image(prompt.images[k], "prompt '" + prompt.name + "', image " + std::to_string(k));
    rows.push_back(encode_image(engine, *projector, projector->preprocess(source.image)));
    c.images.push_back(prompt.images[k]);
    c.image_sha256.push_back(to_hex(sha256(source.bytes)));
  }
  for (const vision::Embeddings& e : rows) image_tokens.push_back(Engine::ImageTokens{e.rows, e.nx, e.ny, e.n_pos});
  if (image_tokens.empty()) {
    c.prompt_ids = tok.encode(prompt.text, {.add_bos = true, .add_eos = false, .parse_special = false});
  } else {
    c.prompt_ids = encode_with_images(tok, prompt.text, image_tokens, [&](std::string_view piece, bool first) {
      return tok.encode(piece, {.add_bos = first, .add_eos = false, .parse_special = false});
    }, placed);
  }
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
    if (!placed.empty()) {
      throw Error("prompt '" + prompt.name + "' has " + std::to_string(c.prompt_ids.size()) +
                  " tokens with its images, more than runtime.context " + std::to_string(context) + " less -n " +
                  std::to_string(n) + " holds; a prompt with images is not cut: raise the context (-o runtime.context=" +
                  std::to_string(c.prompt_ids.size() + n + 1) + ")");
    }
    c.cut_from = c.prompt_ids.size();
    c.prompt_ids.resize(limit);
  }

  engine.cut(0, 0);
  // The text between images through feed, each image through feed_image (as Completion::begin feeds).
  std::span<const float> logits;
  size_t at = 0;
  for (const PromptImage& im : placed) {
    if (im.at > at) logits = engine.feed(0, std::span<const TokenId>(c.prompt_ids.data() + at, im.at - at));
    logits = engine.feed_image(0, im.tokens);
    at = im.at + size_t{im.tokens.nx} * im.tokens.ny;
  }
  if (at < c.prompt_ids.size()) {
    logits = engine.feed(0, std::span<const TokenId>(c.prompt_ids.data() + at, c.prompt_ids.size() - at));
  }
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
