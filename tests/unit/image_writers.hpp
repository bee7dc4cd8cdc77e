// PNG and JPEG bytes written with libpng's and libjpeg's own encoders, for tests of the image decoders and for the
// image fuzzer's seed corpus. Throws std::runtime_error when the library refuses.
#pragma once

#include <cstdint>
#include <vector>

#include "strata/vision.hpp"

namespace strata::test {

// An RGB colour of a PNG palette.
struct PaletteColor {
  uint8_t red, green, blue;
};

// A PNG of w x h from rows of raw samples (`samples` holds h equal rows; 16-bit samples big-endian), of libpng's
// `color_type` and bit `depth`; `palette` for PNG_COLOR_TYPE_PALETTE. `interlaced`: Adam7.
std::vector<uint8_t> make_png(uint32_t w, uint32_t h, int depth, int color_type, const std::vector<uint8_t>& samples,
                              const std::vector<PaletteColor>& palette = {}, bool interlaced = false);

// What a JPEG's scans hold: the image's RGB; one grey channel (its red samples); CMYK (its R, G, B and 100).
enum class JpegColors { Rgb, Grey, Cmyk };

// A JPEG of an RGB image at `quality` (1..100); `progressive` for a progressive scan script.
std::vector<uint8_t> make_jpeg(const vision::Image& image, int quality, bool progressive = false,
                               JpegColors colors = JpegColors::Rgb);

}  // namespace strata::test
