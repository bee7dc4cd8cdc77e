// Images inside a prompt (Qwen3-VL): where each image's tokens go among the text's, and the key by which a cached
// prefix that holds an image is told apart from one that holds another image.
//
// An image stands in the prompt as <|vision_start|>, nx x ny placeholder ids (the start token's id: any valid id
// would do, the rows are what is fed) and <|vision_end|>. Placeholders are the same for every image, so a prefix
// cache compares keyed_prompt()s instead of prompts: there each placeholder is a value derived from the image's
// SHA-256, negative so that it is never a token id.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/engine.hpp"
#include "strata/generate.hpp"
#include "strata/sha256.hpp"
#include "strata/tokenizer.hpp"
#include "strata/vision.hpp"

namespace strata {

// Where image k goes in a prompt's text (llama.cpp's marker), and in `strata engine`'s prompt_ids.
inline constexpr std::string_view kMediaMarker = "<__media__>";
inline constexpr TokenId kImageMark = -1;

// The text split at kMediaMarker, each piece encoded by encode_piece(piece, first) (first: the piece that starts
// the prompt, where a BOS goes), and image k placed at marker k. Without markers the images come first (after the
// first piece's ids for "", i.e. a BOS where the caller adds one). `placed` gets where each image went. Throws
// strata::Error when the markers and images differ in number or the vocabulary has no vision tokens.
std::vector<TokenId> encode_with_images(const Tokenizer& tok, std::string_view text,
                                        std::span<const Engine::ImageTokens> images,
                                        const std::function<std::vector<TokenId>(std::string_view, bool)>& encode_piece,
                                        std::vector<PromptImage>& placed);

// `ids` with kImageMark where image k goes (in order): each mark becomes the image's tokens. Throws strata::Error
// when the marks and images differ in number, or for an id that is neither a mark nor this vocabulary's.
std::vector<TokenId> expand_image_marks(const Tokenizer& tok, std::span<const TokenId> ids,
                                        std::span<const Engine::ImageTokens> images, std::vector<PromptImage>& placed);

// An image's rows for `engine`'s model: the projector's encoder as ops on the engine's backend (a GPU: the whole
// encoder on its device), so that the backend that computes the text computes the image too; the CPU encoder
// (Projector::encode, on every core) where the backend cannot run those ops, and for the reference backend, whose
// single-threaded ops would be slower. Call it on the engine's thread. `where` gets the
// backend's name or "cpu" when not null; `profile`, when not null, each backend op's time (the CPU encoder has none).
vision::Embeddings encode_image(Engine& engine, const vision::Projector& projector, const vision::ProjectorInput& input,
                                std::string* where = nullptr, OpProfile* profile = nullptr);

// The prompt with image k's placeholders replaced by keys derived from digests[k] (and each placeholder's index).
std::vector<TokenId> keyed_prompt(std::span<const TokenId> prompt, std::span<const PromptImage> placed,
                                  std::span<const Sha256Digest> digests);

}  // namespace strata
