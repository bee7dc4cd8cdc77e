// The tokenizer keys of a generated model: a built-in vocabulary of any size, or a copy of another GGUF's.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "strata/gguf.hpp"
#include "strata/hparams.hpp"
#include "strata/tokenizer.hpp"

namespace strata::mkmodel {

// A token type as tokenizer.ggml.token_type stores it.
inline constexpr int32_t token_type_value(TokenType t) { return static_cast<int32_t>(t); }

// SentencePiece-style (tokenizer.ggml.model "llama"): <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then
// pieces with descending scores. At least kMinSpmVocab tokens.
inline constexpr uint32_t kMinSpmVocab = 300;
void write_spm_vocab(gguf::Writer& w, uint32_t n_vocab);

// Byte-level BPE ("gpt2", pre-tokenizer "qwen2"): the 256 byte tokens, tokens built by merges (every merge joins
// two earlier tokens into the next token), then <|endoftext|>, <|im_start|>, <|im_end|>, the `extra` control tokens
// and a ChatML template.
inline constexpr uint32_t kMinBpeVocab = 300;
void write_bpe_vocab(gguf::Writer& w, uint32_t n_vocab, std::span<const std::string_view> extra = {});

// The built-in vocabulary the architecture's real models use: SentencePiece for llama, BPE otherwise; qwen3vlmoe's
// adds the control tokens Qwen's vocabulary has after <|im_end|>, the image delimiters <|vision_start|> and
// <|vision_end|> (which the engine looks up to place an image) and <|image_pad|> among them.
void write_builtin_vocab(gguf::Writer& w, Arch arch, uint32_t n_vocab);
uint32_t min_builtin_vocab(Arch arch);

// Copies every tokenizer.* key of `source`, values byte for byte; returns its number of tokens. strata::Error
// when it has no tokenizer.ggml.tokens.
uint32_t copy_vocab(gguf::Writer& w, const gguf::Metadata& source);

}  // namespace strata::mkmodel
