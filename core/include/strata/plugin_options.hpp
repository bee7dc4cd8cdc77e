// Reading a plugin's options: the host hands them over as "key=value" strings (plugin_api.h, init). Each plugin
// says which keys it knows and words its own messages; the splitting and the values' syntax are the same for all.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace strata {

struct PluginOption {
  std::string_view key, value;  // value empty when there is no '='
};

inline PluginOption split_option(const char* option) {
  const std::string_view opt = option != nullptr ? option : "";
  const size_t eq = opt.find('=');
  return {opt.substr(0, eq), eq == std::string_view::npos ? std::string_view() : opt.substr(eq + 1)};
}

// true/1/yes/on and false/0/no/off; false when the value is neither.
inline bool parse_bool_option(std::string_view v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return *out = true, true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return *out = false, true;
  return false;
}

// A whole number from lo to hi, digits only; false otherwise.
inline bool parse_whole_option(std::string_view v, uint32_t lo, uint32_t hi, uint32_t* out) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < lo || n > hi) return false;
  *out = n;
  return true;
}

}  // namespace strata
