// Scalar text -> typed values (bool, integer, float, byte size, cache size) and back, with a message saying
// what was expected when the text is not one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "strata/config.hpp"

namespace strata::config {

template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;  // set when value is empty: what is wrong, without the key
};

// true/false, yes/no, on/off, 1/0 (any case): environment switches are usually written 1/0.
std::optional<bool> parse_bool(std::string_view text);
// Decimal or 0x-hexadecimal, optional sign.
Parsed<int64_t> parse_int(std::string_view text);
// A finite decimal number ("0.8", "1e-3", ".5", "+2").
Parsed<double> parse_float(std::string_view text);
Parsed<uint64_t> parse_size(std::string_view text);
// `auto`, `N%` (0..100) or a byte size.
Parsed<CacheSize> parse_cache_size(std::string_view text);

// The shortest text that parses back to the same double; always has a '.' or an exponent ("1.0", "0.95").
std::string format_float(double value);
std::string format_cache_size(const CacheSize& cache);

}  // namespace strata::config
