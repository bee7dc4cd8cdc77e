// Exactness gates (`strata gate`): a set of prompts, each run greedily for N tokens, saved as JSON with the
// model's identity and the effective launch; later re-run (another backend, build or machine) and compared id
// for id with the saved run. A gate passes only when every prompt gives the same prompt ids and the same
// generated ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/tokenizer.hpp"

namespace strata {

class Engine;
class Model;
namespace vision {
class Projector;
}

namespace gate {

// The version of the saved file's layout ("format_version"); a file of another version is refused.
inline constexpr int kFormatVersion = 1;
// Tokens generated per prompt unless -n says otherwise.
inline constexpr int kDefaultTokens = 32;

struct Prompt {
  std::string name;
  std::string text;
  // Images (a vision model with its projector): files, data URLs or kBuiltinImage, each at the text's
  // <__media__> marker (first without markers).
  std::vector<std::string> images{};
};

// The built-in set: chat, code, math and long (a text longer than small contexts, cut to fit). The chat prompt
// is plain text, as `strata run` feeds a prompt. With `image` (the launch has a projector) an "image" prompt
// follows: kBuiltinImage with a question about it.
std::vector<Prompt> builtin_prompts(bool image = false);

// The built-in image: a 320 x 240 picture drawn by code (bands, a disc, a checkerboard), as binary PPM bytes.
inline constexpr std::string_view kBuiltinImage = "builtin:gate-picture";
std::vector<uint8_t> builtin_image_bytes();

// A prompt file: a JSON array of objects {"name": "...", "text": "...", "images": [...]} ("images" optional:
// files, relative to the prompt file's folder, or data URLs); names non-empty and unique, no other keys. Throws
// strata::Error naming the source, the entry and the fix.
std::vector<Prompt> parse_prompts(std::string_view json, const std::string& source, const std::string& folder = {});
std::vector<Prompt> read_prompts(const std::string& path);

// What identifies the model a gate ran on.
struct ModelIdentity {
  std::string file;          // the file name, without its folder
  uint64_t bytes = 0;        // every part together
  std::string architecture;  // general.architecture
  uint64_t n_vocab = 0;      // tokens in the vocabulary
  // FNV-1a 64 (16 hex digits) of every part's bytes before its data section: the metadata and tensor infos, so
  // another quantization or another conversion of the same weights differs.
  std::string header_hash;
  // FNV-1a 64 of the token texts in id order, each preceded by its length: the ids mean the same tokens exactly
  // when this (and n_vocab) match.
  std::string vocab_hash;
  bool operator==(const ModelIdentity&) const = default;
};

ModelIdentity identify(const Model& model);
// FNV-1a 64 of `bytes`, continuing from `state` (start with kFnvOffset).
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a64(std::string_view bytes, uint64_t state = kFnvOffset);

// One prompt's run.
struct Case {
  std::string name;
  std::string text;
  std::vector<TokenId> prompt_ids;  // as fed: BOS first where the vocabulary adds one
  size_t cut_from = 0;              // the text's token count when it was cut to fit the context; 0 = not cut
  std::vector<TokenId> ids;         // the generated ids, without a final end-of-text token
  std::string stop;                 // "n_predict" or "eos"
  std::vector<std::string> images{};        // the prompt's image sources, as given
  std::vector<std::string> image_sha256{};  // each image's bytes' SHA-256 (hex): a check re-reads the sources
};

struct Record {
  std::string strata_version;
  int n_predict = 0;
  ModelIdentity model;
  std::string backend;         // the backend that ran (what `auto` chose)
  std::string backend_detail;  // its own description (device, threads, ISA)
  std::string launch_file;     // the launch file as the user named it; "" when there was none
  std::string launch_json;     // the effective launch as a JSON object (the "launch" of config::render_json)
  std::vector<Case> cases;
};

// Encodes the prompt as `strata run` does (BOS, the dummy-prefix space, no EOS), keeps its first `keep` tokens
// (0: all) and at most runtime.context - n_predict of them, feeds them to slot 0 from an empty context, then
// takes the argmax n_predict times (stopping early at end of text). Throws strata::Error when the context
// leaves no room for the prompt.
// A prompt with images needs `projector`; its image tokens are placed as `strata run --image` places them, and it
// is never cut (too long a prompt with images is an Error).
Case run_case(Engine& engine, const Prompt& prompt, int n_predict, size_t keep = 0,
              const vision::Projector* projector = nullptr);

// The saved file: pretty JSON, keys in a fixed order.
std::string to_json(const Record& record);
// Strict: every key present with its type, no unknown keys, ids inside the saved vocabulary, the stop reasons
// consistent with the counts. Throws strata::Error naming the source, the JSON path and the fix.
Record parse_record(std::string_view json, const std::string& source);
Record read_record(const std::string& path);
void write_record(const Record& record, const std::string& path);

// How a re-run compares with a saved case.
struct Verdict {
  enum class Kind { Pass, PromptDiffers, ImageDiffers, IdsDiffer };
  Kind kind = Kind::Pass;
  size_t position = 0;            // the first differing index in prompt_ids (PromptDiffers), image_sha256
                                  // (ImageDiffers) or ids (IdsDiffer)
  std::optional<TokenId> saved;   // the ids there; nullopt: that side ends there
  std::optional<TokenId> now;
  size_t compared = 0;            // generated ids compared (Pass)
};

// Compares prompt ids, then the first `n_compare` generated ids (fewer where both runs end at end of text at
// the same place). A side that ends earlier than the other differs at its end.
Verdict compare_case(const Case& saved, const Case& now, size_t n_compare);
// "PASS (32 ids)", or "FAIL: ids differ at position 7: saved 345 ' the', now 312 ' a'" with each id's text.
std::string verdict_text(const Verdict& v, const Case& saved, const Case& now, const Tokenizer& tokenizer);

// One line per launch key whose value differs: "runtime.context: saved 512, now 1024" (dotted keys, values as
// JSON; a key on one side only shows "(absent)"). Both arguments are JSON objects.
std::vector<std::string> launch_differences(const std::string& saved_json, const std::string& now_json);
// One line per identity field that differs: "header_hash: saved 0123..., now 4567...".
std::vector<std::string> model_differences(const ModelIdentity& saved, const ModelIdentity& now);
// Token ids mean the same tokens in both.
bool same_vocabulary(const ModelIdentity& a, const ModelIdentity& b);

}  // namespace gate
}  // namespace strata
