#include "scalars.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "strata/error.hpp"

namespace strata::config {
namespace {

__extension__ typedef unsigned __int128 u128;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

struct Unit {
  std::string_view name;
  uint64_t factor;
};

constexpr std::array<Unit, 10> kUnits = {{
    {"B", 1},
    {"KiB", 1ull << 10},
    {"MiB", 1ull << 20},
    {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},
    {"KB", 1000ull},
    {"kB", 1000ull},
    {"MB", 1000ull * 1000},
    {"GB", 1000ull * 1000 * 1000},
    {"TB", 1000ull * 1000 * 1000 * 1000},
}};

const char* const kUnitHelp = "use B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)";

}  // namespace

std::optional<bool> parse_bool(std::string_view text) {
  text = trim(text);
  for (std::string_view t : {"true", "yes", "on", "1"})
    if (equals_lower(text, t)) return true;
  for (std::string_view f : {"false", "no", "off", "0"})
    if (equals_lower(text, f)) return false;
  return std::nullopt;
}

Parsed<int64_t> parse_int(std::string_view text) {
  text = trim(text);
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  uint64_t magnitude = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, magnitude, base);
  if (digits.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return {std::nullopt, "expected an integer, got '" + std::string(text) + "'"};
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (ec == std::errc::result_out_of_range || magnitude > limit)
    return {std::nullopt, "'" + std::string(text) + "' is too large for a 64-bit integer"};
  // Negating in unsigned arithmetic keeps INT64_MIN free of signed overflow (the conversion is modular in C++20).
  const uint64_t bits = negative ? ~magnitude + 1 : magnitude;
  return {static_cast<int64_t>(bits), {}};
}

Parsed<double> parse_float(std::string_view text) {
  text = trim(text);
  std::string_view body = text;
  if (!body.empty() && body.front() == '+') body.remove_prefix(1);
  double value = 0;
  const char* end = body.data() + body.size();
  auto [ptr, ec] = std::from_chars(body.data(), end, value, std::chars_format::general);
  if (body.empty() || ptr != end || ec == std::errc::invalid_argument)
    return {std::nullopt, "expected a number, got '" + std::string(text) + "'"};
  if (ec == std::errc::result_out_of_range || !std::isfinite(value))
    return {std::nullopt, "'" + std::string(text) + "' is not a finite number"};
  return {value, {}};
}

Parsed<uint64_t> parse_size(std::string_view text) {
  text = trim(text);
  const std::string quoted = "'" + std::string(text) + "'";
  if (!text.empty() && text.front() == '-') return {std::nullopt, quoted + " is negative: a size must be >= 0"};
  size_t i = 0;
  uint64_t mantissa = 0;  // all digits, integer and fraction, as one integer
  int fraction_digits = 0;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (__builtin_mul_overflow(mantissa, uint64_t{10}, &mantissa) ||
        __builtin_add_overflow(mantissa, static_cast<uint64_t>(c - '0'), &mantissa))
      return {std::nullopt, quoted + (in_fraction ? " has too many digits" : " is too large")};
    if (in_fraction) ++fraction_digits;
  }
  // Trailing zeros of the fraction do not change the value ("1.50GiB" = "1.5GiB").
  while (fraction_digits > 0 && mantissa % 10 == 0) {
    mantissa /= 10;
    --fraction_digits;
  }
  const bool has_digit = text.find_first_of("0123456789") < i;
  if (!has_digit)
    return {std::nullopt, "expected a size such as 8GiB, 512MiB or 1000000, got " + quoted};
  const std::string_view unit_text = trim(text.substr(i));
  uint64_t factor = 1;
  if (!unit_text.empty()) {
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits)
      if (u.name == unit_text) unit = &u;
    if (unit == nullptr)
      return {std::nullopt, quoted + " has an unknown unit '" + std::string(unit_text) + "': " + kUnitHelp};
    factor = unit->factor;
  }
  // mantissa * factor < 2^104 < 10^32: a finer fraction than 10^-38 cannot give whole bytes (and would overflow).
  if (fraction_digits > 38) return {std::nullopt, quoted + " is not a whole number of bytes"};
  u128 scale = 1;
  for (int k = 0; k < fraction_digits; ++k) scale *= 10;
  const u128 product = static_cast<u128>(mantissa) * factor;
  if (product % scale != 0) return {std::nullopt, quoted + " is not a whole number of bytes"};
  const u128 bytes = product / scale;
  if (bytes > std::numeric_limits<uint64_t>::max()) return {std::nullopt, quoted + " is too large"};
  return {static_cast<uint64_t>(bytes), {}};
}

Parsed<CacheSize> parse_cache_size(std::string_view text) {
  text = trim(text);
  if (text == "auto") return {CacheSize{}, {}};
  if (!text.empty() && text.back() == '%') {
    Parsed<double> p = parse_float(text.substr(0, text.size() - 1));
    if (!p.value) return {std::nullopt, "expected a percentage such as 25%, got '" + std::string(text) + "'"};
    if (*p.value < 0 || *p.value > 100)
      return {std::nullopt, "'" + std::string(text) + "' is out of range: a percentage must be 0..100%"};
    return {CacheSize{CacheSize::Kind::Percent, *p.value, 0}, {}};
  }
  // Text that does not even start like a number gets the full list of forms; a size with a wrong unit or
  // sign gets the size's own message.
  if (text.empty() || !((text.front() >= '0' && text.front() <= '9') || text.front() == '.' || text.front() == '-'))
    return {std::nullopt, "expected auto, a percentage such as 25% or a size such as 8GiB, got '" +
                              std::string(text) + "'"};
  Parsed<uint64_t> size = parse_size(text);
  if (!size.value) return {std::nullopt, size.error};
  return {CacheSize{CacheSize::Kind::Bytes, 0, *size.value}, {}};
}

std::string format_float(double value) {
  std::array<char, 64> buf{};
  auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  std::string s(buf.data(), ec == std::errc() ? ptr : buf.data());
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_cache_size(const CacheSize& cache) {
  switch (cache.kind) {
    case CacheSize::Kind::Auto: return "auto";
    case CacheSize::Kind::Percent: {
      std::string p = format_float(cache.percent);
      if (p.size() > 2 && p.compare(p.size() - 2, 2, ".0") == 0) p.resize(p.size() - 2);
      return p + "%";
    }
    case CacheSize::Kind::Bytes: return format_byte_size(cache.bytes);
  }
  return "auto";
}

uint64_t parse_byte_size(std::string_view text) {
  Parsed<uint64_t> p = parse_size(text);
  if (!p.value) throw Error(p.error);
  return *p.value;
}

std::string format_byte_size(uint64_t bytes) {
  static constexpr std::array<Unit, 4> binary = {{{"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20},
                                                  {"KiB", 1ull << 10}}};
  if (bytes != 0)
    for (const Unit& u : binary)
      if (bytes % u.factor == 0) return std::to_string(bytes / u.factor) + std::string(u.name);
  return std::to_string(bytes);
}

}  // namespace strata::config
