#include "text_format.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata::inspect::detail {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one (overlong forms,
// surrogates and values past U+10FFFF count as invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  size_t len = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3Fu);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return len;
}

}  // namespace

std::string quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default: break;
    }
    const size_t len = c < 0x20 || c == 0x7F ? 0 : utf8_sequence_length(s, i);
    if (len == 0) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  out += '"';
  return out;
}

std::string display_name(std::string_view s) {
  // Any escape makes the quoted form longer than the string plus its two quotes.
  std::string q = quote(s);
  return q.size() == s.size() + 2 ? std::string(s) : q;
}

std::string_view utf8_prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  // Back up over continuation bytes so the cut falls before the start of a sequence.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0u) == 0x80u && max_bytes - cut < 3) --cut;
  return s.substr(0, cut);
}

std::string format_f32(float v) {
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

std::string format_f64(double v) {
  std::array<char, 64> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

double f32_as_short_double(float v) {
  if (!std::isfinite(v)) return static_cast<double>(v);
  const std::string text = format_f32(v);
  double d = 0;
  std::from_chars(text.data(), text.data() + text.size(), d);
  return d;
}

std::string shape_text(std::span<const uint64_t> ne) {
  std::string s;
  for (size_t d = 0; d < ne.size(); ++d) s += (d > 0 ? " x " : "") + std::to_string(ne[d]);
  return s.empty() ? "scalar" : s;
}

std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  return buf;
}

}  // namespace strata::inspect::detail
