#include <string>
#include <string_view>
#include <vector>

#include "vocab.hpp"

namespace strata::mkmodel {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes for code points
// 256, 257, ... in byte order. Tokens 0..255 follow that order: the printable bytes first.
std::vector<std::string> byte_tokens() {
  std::vector<std::string> printable, remapped;
  uint32_t next_remap = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    std::string s;
    const bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    append_utf8(s, keep ? b : next_remap++);
    (keep ? printable : remapped).push_back(s);
  }
  printable.insert(printable.end(), remapped.begin(), remapped.end());
  return printable;
}

// Byte-level strings of merged tokens, by length: an optional leading space ("Ġ", byte 32's code point) and
// lower-case letters. Each is made by merging the string without its last character with that character, both
// already tokens.
class MergeSource {
 public:
  struct Merge {
    std::string left, right;
  };
  Merge next() {
    const std::string_view letters = "etaoinshrdlcumwfgypbvkjxqz";
    while (true) {
      if (digits_.empty()) {
        digits_.assign(2, 0);
      } else {
        size_t i = digits_.size();
        while (i > 0 && ++digits_[i - 1] == 27) digits_[--i] = 0;
        if (i == 0) digits_.assign(digits_.size() + 1, 0);
      }
      // Digit 26 is the space marker; it may only lead.
      bool ok = true;
      for (size_t k = 1; k < digits_.size(); ++k) ok = ok && digits_[k] != 26;
      if (!ok) continue;
      Merge m;
      for (size_t k = 0; k + 1 < digits_.size(); ++k) {
        if (digits_[k] == 26) {
          m.left += "\u0120";
        } else {
          m.left += letters[digits_[k]];
        }
      }
      m.right = std::string(1, letters[digits_.back()]);
      return m;
    }
  }

 private:
  std::vector<size_t> digits_;
};

constexpr std::string_view kChatMlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

void write_bpe_vocab(gguf::Writer& w, uint32_t n_vocab, std::span<const std::string_view> extra) {
  std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  for (std::string_view t : extra) specials.emplace_back(t);
  std::vector<std::string> tokens = byte_tokens();
  std::vector<std::string> merges;
  MergeSource source;
  while (tokens.size() + specials.size() < n_vocab) {
    const MergeSource::Merge m = source.next();
    merges.push_back(m.left + " " + m.right);
    tokens.push_back(m.left + m.right);
  }
  std::vector<int32_t> types(tokens.size(), token_type_value(TokenType::Normal));
  const auto first_special = static_cast<uint32_t>(tokens.size());
  for (const std::string& s : specials) {
    tokens.push_back(s);
    types.push_back(token_type_value(TokenType::Control));
  }

  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  w.set_array("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
  w.set_array("tokenizer.ggml.token_type", std::span<const int32_t>(types));
  w.set_array("tokenizer.ggml.merges", std::span<const std::string>(merges));
  w.set_u32("tokenizer.ggml.eos_token_id", first_special + 2);
  w.set_u32("tokenizer.ggml.padding_token_id", first_special);
  w.set_u32("tokenizer.ggml.bos_token_id", first_special);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_string("tokenizer.chat_template", kChatMlTemplate);
}

// Qwen2-VL's and Qwen3-VL's control tokens after <|im_end|> (ids 151646..151656 in the real vocabulary).
constexpr std::string_view kQwenVisionSpecials[] = {
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>",     "<|vision_end|>",     "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"};

void write_builtin_vocab(gguf::Writer& w, Arch arch, uint32_t n_vocab) {
  if (arch == Arch::Llama) {
    write_spm_vocab(w, n_vocab);
  } else if (arch == Arch::Qwen3VlMoe) {
    write_bpe_vocab(w, n_vocab, kQwenVisionSpecials);
  } else {
    write_bpe_vocab(w, n_vocab);
  }
}

uint32_t min_builtin_vocab(Arch arch) { return arch == Arch::Llama ? kMinSpmVocab : kMinBpeVocab; }

}  // namespace strata::mkmodel
