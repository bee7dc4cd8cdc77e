// Small text helpers shared by inspect's renderers: escaping file strings for one-line display, cutting them at a
// UTF-8 boundary, shortest round-trip numbers, human byte counts.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace strata::inspect::detail {

// Nested arrays show (text) or list (JSON) their elements only at the top level: a hostile file may nest 16 deep.
inline constexpr int kMaxShownDepth = 1;

// `s` in double quotes; quotes, backslashes and control characters escaped C-style, bytes that are not part of
// valid UTF-8 as \xNN, so that any file string prints as one readable line.
std::string quote(std::string_view s);

// `s` as it is when it prints cleanly (no control characters or broken UTF-8), else quote(s): for key and tensor
// names, which are plain in real files but arbitrary bytes in a hostile one.
std::string display_name(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);

// Shortest text that reads back to the same value ("1e-05" for the f32 nearest 1e-5, not 9.99999974e-06).
std::string format_f32(float v);
std::string format_f64(double v);
// The double whose shortest text equals the f32's: for JSON, where numbers are doubles.
double f32_as_short_double(float v);

// "64 x 512": a tensor shape in ggml order (innermost first).
std::string shape_text(std::span<const uint64_t> ne);

// "1.13 MiB", "512 B".
std::string human_bytes(uint64_t bytes);

}  // namespace strata::inspect::detail
