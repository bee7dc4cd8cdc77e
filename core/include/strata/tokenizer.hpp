// Tokenizers built from a GGUF's tokenizer.ggml.* metadata, giving the same ids as llama.cpp:
// - "llama": SentencePiece BPE (merges by token score, byte fallback to <0xXX> tokens, a dummy-prefix space);
// - "gpt2": byte-level BPE (GPT-2's byte-to-character mapping, merges by rank from tokenizer.ggml.merges) after
//   the split rules of the vocabulary's pre-tokenizer (tokenizer.ggml.pre).
// Control, unknown and user-defined tokens are matched as whole strings before either runs (see EncodeOptions).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

namespace gguf {
class Metadata;
}

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// As tokenizer.ggml.token_type stores them.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

enum class TokenizerModel {
  SentencePiece,  // tokenizer.ggml.model "llama"
  ByteLevelBpe,   // tokenizer.ggml.model "gpt2"
};

// The split rules applied before byte-level BPE. Each is named after the tokenizer.ggml.pre value that selects
// it; other values select the same rules where their models share them (pre_tokenizer_names() lists all).
enum class PreTokenizer {
  Default,        // "default" or no tokenizer.ggml.pre
  Gpt2,           // "gpt-2", "mpt", "olmo", "phi-2", ...
  Llama3,         // "llama-bpe", "llama3", "dbrx", "smaug-bpe", "glm4", "chatglm-bpe", ...
  Qwen2,          // "qwen2", "stablelm2", "hunyuan", "bailingmoe", "grok-2", "deepseek-r1-qwen", ...
  Qwen35,         // "qwen35"
  DeepseekLlm,    // "deepseek-llm"
  DeepseekCoder,  // "deepseek-coder"
  DeepseekV3,     // "deepseek-v3", "hunyuan-dense"
  Starcoder,      // "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"
  Falcon,         // "falcon"
  Gpt4o,          // "gpt-4o", "llama4", "minimax-m2"
  Tekken,         // "tekken"
};

// The words `kind` splits `text` into (byte-level BPE merges within a word, never across): views of `text`, in
// order, together covering it.
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);

// Every tokenizer.ggml.pre value this build knows.
std::vector<std::string> pre_tokenizer_names();
// nullopt for a name this build does not know.
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);

// What a tokenizer is built from: a GGUF's tokenizer.ggml.* keys (read_vocab_spec), or filled in by hand.
// Optional fields left empty take llama.cpp's defaults for the tokenizer model (and pre-tokenizer).
struct VocabSpec {
  std::string source = "vocabulary";  // names the vocabulary in messages (the GGUF file name)
  std::string model;                  // tokenizer.ggml.model: "llama" or "gpt2"
  std::string pre;                    // tokenizer.ggml.pre; empty: "default"
  std::vector<std::string> tokens;    // tokenizer.ggml.tokens, by id
  std::vector<float> scores;          // tokenizer.ggml.scores; empty: all 0
  std::vector<int32_t> types;         // tokenizer.ggml.token_type; empty: all normal
  std::vector<std::string> merges;    // tokenizer.ggml.merges ("left right"), gpt2 only
  std::optional<int64_t> bos_id;      // tokenizer.ggml.bos_token_id
  std::optional<int64_t> eos_id;      // tokenizer.ggml.eos_token_id
  std::optional<int64_t> unk_id;      // tokenizer.ggml.unknown_token_id
  std::optional<bool> add_bos;        // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;        // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix
};

// Reads the tokenizer keys of a GGUF. Throws gguf::MetadataError for a missing vocabulary or a key of the
// wrong type.
VocabSpec read_vocab_spec(const gguf::Metadata& metadata);

struct EncodeOptions {
  // Add BOS / EOS where the vocabulary asks for them (tokenizer.ggml.add_bos_token / add_eos_token).
  bool add_bos = true;
  bool add_eos = true;
  // Match the texts of control and unknown tokens ("<|im_start|>", "<s>") in the input as those tokens. Off,
  // they are ordinary text. User-defined tokens are always matched, as llama.cpp and Hugging Face do.
  bool parse_special = false;
};

struct DecodeOptions {
  // Drop a leading BOS and a trailing EOS where the vocabulary adds them.
  bool remove_special = false;
  // Control and unknown tokens give their text; otherwise they give nothing.
  bool render_special = false;
};

class Tokenizer {
 public:
  // Validates the spec (message names the source, the key and the id); throws strata::Error.
  explicit Tokenizer(VocabSpec spec);
  static Tokenizer from_metadata(const gguf::Metadata& metadata);
  // Opens a GGUF (only its metadata is read).
  static Tokenizer from_file(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Thread-safe. Invalid UTF-8 is kept byte for byte where the vocabulary can spell the bytes (byte fallback, or
  // byte-level BPE with a normal token for each byte); a byte it cannot spell becomes U+FFFD.
  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;
  // The bytes the tokens stand for, as llama.cpp's detokenizer gives them: without clean-up of spaces, the
  // leading space of the first piece removed when the vocabulary adds a dummy prefix and the tokens do not
  // start with BOS. Throws strata::Error for an id outside the vocabulary.
  std::string decode(std::span<const TokenId> tokens, const DecodeOptions& options = {}) const;
  // The bytes of one token (a byte token gives one byte, which may be part of a UTF-8 sequence).
  std::string piece(TokenId id, bool render_special = true) const;

  size_t size() const;
  std::string_view token_text(TokenId id) const;
  TokenType token_type(TokenId id) const;
  float token_score(TokenId id) const;
  // kNoToken when no token has exactly this text.
  TokenId find(std::string_view text) const;

  TokenizerModel model() const;
  PreTokenizer pre_tokenizer() const;  // Default for SentencePiece
  TokenId bos() const;                 // kNoToken when the vocabulary has none
  TokenId eos() const;
  TokenId unk() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Turns generated tokens into text as they arrive, emitting only complete UTF-8: a code point split across
// tokens (byte tokens, byte-level BPE pieces) is held back until its last byte arrives. Bytes that cannot be
// part of valid UTF-8 come out as U+FFFD, one per maximal ill-formed subsequence; finish() turns a held,
// unfinished sequence into U+FFFD.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false);

  // The text completed by this token (may be empty).
  std::string push(TokenId id);
  // The bytes still held, as U+FFFD; the decoder is then empty again.
  std::string finish();
  // Bytes held back, waiting for the rest of a code point.
  size_t pending() const { return held_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string held_;
};

}  // namespace strata
