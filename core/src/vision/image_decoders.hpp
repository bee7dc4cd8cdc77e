// The per-format image decoders behind vision::decode_image (decode_image.cpp sniffs the format and calls one).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "strata/error.hpp"
#include "strata/vision.hpp"

namespace strata::vision::detail {

// Larger images are refused before their pixels are allocated (a hostile header cannot ask for gigabytes).
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 27;

[[noreturn]] inline void refuse(std::string_view what, const std::string& problem) {
  throw Error(std::string(what) + ": " + problem);
}

// Refuses a zero or oversized width or height, naming `format`.
void check_dimensions(std::string_view what, std::string_view format, uint64_t width, uint64_t height);

Image decode_ppm(std::span<const uint8_t> bytes, std::string_view what);
Image decode_png(std::span<const uint8_t> bytes, std::string_view what);
Image decode_jpeg(std::span<const uint8_t> bytes, std::string_view what);

}  // namespace strata::vision::detail
