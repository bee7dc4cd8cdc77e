// Finds an image's format by its magic bytes and hands it to that format's decoder; reads image files.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "image_decoders.hpp"

namespace strata::vision {
namespace detail {

void check_dimensions(std::string_view what, std::string_view format, uint64_t width, uint64_t height,
                      uint64_t encoded) {
  if (width == 0 || height == 0) {
    refuse(what, std::string(format) + " image of size " + std::to_string(width) + "x" + std::to_string(height) +
                     ": an image needs at least one pixel");
  }
  if (width > kMaxImagePixels || height > kMaxImagePixels || width * height > kMaxImagePixels) {
    refuse(what, std::string(format) + " image of size " + std::to_string(width) + "x" + std::to_string(height) +
                     " is too large (at most " + std::to_string(kMaxImagePixels) + " pixels)");
  }
  if (encoded > 0 && width * height * 3 > encoded * kMaxExpansion) {
    refuse(what, std::string(format) + " header says " + std::to_string(width) + "x" + std::to_string(height) +
                     ", which " + std::to_string(encoded) +
                     " bytes cannot hold: the file is truncated or its header is false");
  }
}

}  // namespace detail

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::initializer_list<uint8_t> magic) {
  if (bytes.size() < magic.size()) return false;
  return std::equal(magic.begin(), magic.end(), bytes.begin());
}

}  // namespace

Image decode_image(std::span<const uint8_t> bytes, std::string_view what) {
  if (bytes.empty()) detail::refuse(what, "empty: no image data");
  if (starts_with(bytes, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) return detail::decode_png(bytes, what);
  if (starts_with(bytes, {0xff, 0xd8, 0xff})) return detail::decode_jpeg(bytes, what);
  if (starts_with(bytes, {'P', '6'})) return detail::decode_ppm(bytes, what);
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') {
    detail::refuse(what, std::string("a P") + static_cast<char>(bytes[1]) +
                             " netpbm file: of that family only binary PPM (P6) is read; convert it to PNG or P6");
  }
  detail::refuse(what, "not an image this build reads (its first bytes are neither PNG, JPEG nor binary PPM P6)");
}

Image load_image(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open image " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("cannot read image " + path + ": " + std::strerror(errno));
  return decode_image(bytes, path);
}

}  // namespace strata::vision
