// Images sent inline: data URLs (RFC 2397) as OpenAI clients send them in image_url parts. Nothing here decodes an
// image (the request parser, which the fuzzer builds alone, links this file).
#include <cctype>

#include "strata/vision.hpp"

namespace strata::vision {
namespace {

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // '-' and '_': the URL-safe alphabet
  if (c == '/' || c == '_') return 63;
  return -1;
}

std::vector<uint8_t> decode_base64(std::string_view text, std::string_view what) {
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isspace(c)) continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = base64_value(c);
    if (v < 0 || pad > 0) {
      throw Error(std::string(what) + ": the base64 data has " +
                  (v < 0 ? "the character '" + std::string(1, static_cast<char>(c)) + "'"
                         : std::string("data after its '=' padding")) +
                  " at offset " + std::to_string(i) + "; send the image's bytes base64-encoded");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  if (bits >= 6 || pad > 2) {
    throw Error(std::string(what) + ": the base64 data is cut short (its length is not a whole number of bytes)");
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::vector<uint8_t> decode_percent(std::string_view text, std::string_view what) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(static_cast<uint8_t>(text[i]));
      continue;
    }
    const int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) throw Error(std::string(what) + ": a '%' not followed by two hex digits at offset " + std::to_string(i));
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

}  // namespace

bool is_data_url(std::string_view text) { return starts_with_nocase(text, "data:"); }

std::vector<uint8_t> decode_data_url(std::string_view url, std::string_view what) {
  if (starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://")) {
    throw Error(std::string(what) + ": an http(s) URL; Strata fetches nothing from the network: send the image "
                "inline as a data URL (data:image/png;base64,...)");
  }
  if (!is_data_url(url)) {
    throw Error(std::string(what) + ": not a data URL (it should start with data:, as data:image/jpeg;base64,...)");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    throw Error(std::string(what) + ": a data URL without the ',' that starts its data");
  }
  const std::string_view head = url.substr(5, comma - 5);
  const std::string_view data = url.substr(comma + 1);
  const bool base64 = head.size() >= 7 && starts_with_nocase(head.substr(head.size() - 7), ";base64");
  std::vector<uint8_t> bytes = base64 ? decode_base64(data, what) : decode_percent(data, what);
  if (bytes.empty()) throw Error(std::string(what) + ": the data URL holds no data");
  return bytes;
}

}  // namespace strata::vision
