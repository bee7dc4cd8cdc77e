// UTF-8 decoding with the Unicode Standard's rules for ill-formed input (§3.9, "U+FFFD substitution of maximal
// subparts"), and encoding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::tokenizer_detail {

inline constexpr uint32_t kReplacementCharacter = 0xFFFD;

enum class Utf8Status : uint8_t {
  Valid,
  Invalid,    // the `length` bytes are a maximal ill-formed subpart; code_point is U+FFFD
  Truncated,  // the input ends inside a sequence whose bytes so far are well-formed
};

struct Utf8Char {
  uint32_t code_point;
  uint32_t length;  // bytes consumed, at least 1
  Utf8Status status;
};

// Decodes the sequence starting at text[pos] (pos < text.size()).
Utf8Char decode_utf8(std::string_view text, size_t pos);

void append_utf8(std::string& out, uint32_t code_point);

}  // namespace strata::tokenizer_detail
