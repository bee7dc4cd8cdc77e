#include "strata/prompt_images.hpp"

#include <string>

#include "strata/backend.hpp"
#include "strata/error.hpp"

namespace strata {
namespace {

struct VisionTokens {
  TokenId start = kNoToken, end = kNoToken;
};

VisionTokens vision_tokens(const Tokenizer& tok) {
  const VisionTokens v{tok.find("<|vision_start|>"), tok.find("<|vision_end|>")};
  if (v.start == kNoToken || v.end == kNoToken) {
    throw Error("images need <|vision_start|> and <|vision_end|> in the vocabulary (a Qwen3-VL model); this one has "
                "no such tokens");
  }
  return v;
}

void append_image(std::vector<TokenId>& ids, const VisionTokens& v, const Engine::ImageTokens& im,
                  std::vector<PromptImage>& placed) {
  ids.push_back(v.start);
  placed.push_back(PromptImage{ids.size(), im});
  ids.insert(ids.end(), size_t{im.nx} * im.ny, v.start);
  ids.push_back(v.end);
}

// splitmix64's finalizer: spreads a digest word and an index over 64 bits.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<TokenId> encode_with_images(const Tokenizer& tok, std::string_view text,
                                        std::span<const Engine::ImageTokens> images,
                                        const std::function<std::vector<TokenId>(std::string_view, bool)>& encode_piece,
                                        std::vector<PromptImage>& placed) {
  const VisionTokens v = vision_tokens(tok);
  std::vector<std::string_view> pieces;
  for (size_t from = 0;;) {
    const size_t m = text.find(kMediaMarker, from);
    pieces.push_back(text.substr(from, m == std::string_view::npos ? std::string_view::npos : m - from));
    if (m == std::string_view::npos) break;
    from = m + kMediaMarker.size();
  }
  const bool marked = pieces.size() > 1;
  if (marked && pieces.size() - 1 != images.size()) {
    throw Error("the prompt has " + std::to_string(pieces.size() - 1) + " " + std::string(kMediaMarker) +
                " markers and " + std::to_string(images.size()) +
                " images; give one image per marker (or no markers: images first)");
  }
  if (!marked) pieces.insert(pieces.begin(), std::string_view());
  std::vector<TokenId> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) append_image(ids, v, images[i - 1], placed);
    if (i == 0 || !pieces[i].empty()) {
      const std::vector<TokenId> t = encode_piece(pieces[i], i == 0);
      ids.insert(ids.end(), t.begin(), t.end());
    }
  }
  return ids;
}

std::vector<TokenId> expand_image_marks(const Tokenizer& tok, std::span<const TokenId> ids,
                                        std::span<const Engine::ImageTokens> images, std::vector<PromptImage>& placed) {
  size_t marks = 0;
  for (TokenId id : ids) marks += id == kImageMark ? 1 : 0;
  if (marks != images.size()) {
    throw Error("the prompt ids hold " + std::to_string(marks) + " image marks (-1) and the request " +
                std::to_string(images.size()) + " images; give one image per mark");
  }
  std::vector<TokenId> out;
  if (marks == 0) return std::vector<TokenId>(ids.begin(), ids.end());
  const VisionTokens v = vision_tokens(tok);
  size_t k = 0;
  for (TokenId id : ids) {
    if (id == kImageMark) {
      append_image(out, v, images[k++], placed);
    } else if (id < 0 || static_cast<size_t>(id) >= tok.size()) {
      throw Error("the prompt ids hold " + std::to_string(id) + ", neither a token id of this vocabulary (0 to " +
                  std::to_string(tok.size() - 1) + ") nor an image mark (-1)");
    } else {
      out.push_back(id);
    }
  }
  return out;
}

vision::Embeddings encode_image(Engine& engine, const vision::Projector& projector, const vision::ProjectorInput& input,
                                std::string* where, OpProfile* profile) {
  Backend& backend = engine.backend();
  // The reference backend's ops are plain and single-threaded; the CPU encoder computes the same steps on every core.
  const bool plain = backend.name() == "reference";
  vision::EncodeOptions options;
  options.profile = profile;
  options.f16_attention = backend.device_memory() != nullptr;  // a GPU: its tensor-core attention, llama.cpp's default
  if (std::optional<vision::Embeddings> e = plain ? std::nullopt : projector.encode_on(backend, input, options)) {
    if (where != nullptr) *where = backend.name();
    return std::move(*e);
  }
  if (where != nullptr) *where = "cpu";
  return projector.encode(input);
}

std::vector<TokenId> keyed_prompt(std::span<const TokenId> prompt, std::span<const PromptImage> placed,
                                  std::span<const Sha256Digest> digests) {
  if (digests.size() != placed.size()) throw Error("keyed_prompt: one digest per image");
  std::vector<TokenId> out(prompt.begin(), prompt.end());
  for (size_t k = 0; k < placed.size(); ++k) {
    uint64_t words[4] = {0, 0, 0, 0};
    for (size_t b = 0; b < 32; ++b) words[b / 8] = words[b / 8] << 8 | digests[k][b];
    const size_t n = size_t{placed[k].tokens.nx} * placed[k].tokens.ny;
    for (size_t i = 0; i < n && placed[k].at + i < out.size(); ++i) {
      // 30 bits per placeholder, from the digest's word i mod 4 and i: a false match needs every one of them (an
      // image has at least 8) to agree, 240 bits drawn from all 256 of the digest. -2 and below: never an id or a
      // mark.
      const uint64_t key = mix(words[i % 4] + i * 0x9e3779b97f4a7c15ULL);
      out[placed[k].at + i] = -2 - static_cast<TokenId>(key & 0x3fffffff);
    }
  }
  return out;
}

}  // namespace strata
