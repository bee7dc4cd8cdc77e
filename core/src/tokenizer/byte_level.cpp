#include "byte_level.hpp"

#include <array>

#include "utf8.hpp"

namespace strata::tokenizer_detail {
namespace {

// Bytes that are printable Latin-1 characters ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other
// 68 bytes take the code points from U+0100 upwards, in byte order.
constexpr bool stands_for_itself(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> symbol_utf8;
  std::array<int16_t, 512> byte_of;  // indexed by code point; every mapped code point is below U+0144
};

const Tables& tables() {
  static const Tables t = [] {
    Tables x;
    x.byte_of.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = stands_for_itself(b) ? b : next++;
      append_utf8(x.symbol_utf8[b], cp);
      x.byte_of[cp] = static_cast<int16_t>(b);
    }
    return x;
  }();
  return t;
}

}  // namespace

std::string_view byte_to_symbol(uint8_t b) { return tables().symbol_utf8[b]; }

void append_byte_symbols(std::string& out, std::string_view bytes) {
  const Tables& t = tables();
  for (const char c : bytes) out += t.symbol_utf8[static_cast<uint8_t>(c)];
}

int symbol_to_byte(uint32_t cp) {
  if (cp >= tables().byte_of.size()) return -1;
  return tables().byte_of[cp];
}

}  // namespace strata::tokenizer_detail
