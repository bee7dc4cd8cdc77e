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

// The most RGB bytes one byte of a PNG or JPEG can decode to, with room to spare: deflate expands at most about
// 1032:1, and a JPEG's flat block costs at least two bits (its DC difference and end of block), 683:1 at the
// widest subsampling. A header that promises more than this from the bytes at hand is false or truncated.
inline constexpr uint64_t kMaxExpansion = 2048;

// Refuses a zero or oversized width or height, naming `format`; and (encoded > 0) a size that `encoded` bytes of a
// compressed format cannot hold, before any pixel is allocated (a 100-byte file must not cost hundreds of MB).
void check_dimensions(std::string_view what, std::string_view format, uint64_t width, uint64_t height,
                      uint64_t encoded = 0);

Image decode_ppm(std::span<const uint8_t> bytes, std::string_view what);
Image decode_png(std::span<const uint8_t> bytes, std::string_view what);
Image decode_jpeg(std::span<const uint8_t> bytes, std::string_view what);

}  // namespace strata::vision::detail
