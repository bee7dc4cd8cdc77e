// GPT-2's reversible byte-to-character mapping: byte-level BPE vocabularies spell every byte as one printable
// code point (space is 'Ġ' U+0120, newline 'Ċ' U+010A), so that token texts never hold raw bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata::tokenizer_detail {

// The UTF-8 of the character that stands for byte b.
std::string_view byte_to_symbol(uint8_t b);
// Appends the characters standing for each byte of `bytes`.
void append_byte_symbols(std::string& out, std::string_view bytes);
// The byte a character stands for; -1 for a character outside the mapping.
int symbol_to_byte(uint32_t code_point);

}  // namespace strata::tokenizer_detail
