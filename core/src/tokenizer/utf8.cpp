#include "utf8.hpp"

namespace strata::tokenizer_detail {
namespace {

struct LeadByte {
  uint8_t length;                  // bytes in the sequence
  uint8_t second_lo, second_hi;    // allowed range of the second byte (it excludes overlongs and surrogates)
  uint32_t bits;                   // payload bits of the lead byte
};

// Table 3-7 of the Unicode Standard (well-formed UTF-8 byte sequences); length 0 marks a byte that can never
// start a sequence (continuation bytes, C0, C1, F5..FF).
LeadByte classify(uint8_t b) {
  if (b < 0x80) return {1, 0, 0, b};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF, static_cast<uint32_t>(b & 0x1F)};
  if (b == 0xE0) return {3, 0xA0, 0xBF, 0};
  if (b == 0xED) return {3, 0x80, 0x9F, 0xD};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF, static_cast<uint32_t>(b & 0x0F)};
  if (b == 0xF0) return {4, 0x90, 0xBF, 0};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF, static_cast<uint32_t>(b & 0x07)};
  if (b == 0xF4) return {4, 0x80, 0x8F, 4};
  return {0, 0, 0, 0};
}

}  // namespace

Utf8Char decode_utf8(std::string_view text, size_t pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  const LeadByte info = classify(lead);
  if (info.length == 1) return {lead, 1, Utf8Status::Valid};
  if (info.length == 0) return {kReplacementCharacter, 1, Utf8Status::Invalid};
  uint32_t cp = info.bits;
  for (uint32_t i = 1; i < info.length; ++i) {
    if (pos + i >= text.size()) return {kReplacementCharacter, i, Utf8Status::Truncated};
    const auto b = static_cast<uint8_t>(text[pos + i]);
    const uint8_t lo = i == 1 ? info.second_lo : 0x80;
    const uint8_t hi = i == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) return {kReplacementCharacter, i, Utf8Status::Invalid};
    cp = (cp << 6) | (b & 0x3Fu);
  }
  return {cp, info.length, Utf8Status::Valid};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace strata::tokenizer_detail
