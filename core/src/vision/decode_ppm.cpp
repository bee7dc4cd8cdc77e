// Binary PPM (P6): "P6", width, height and maxval as decimal numbers separated by whitespace (with '#' comments
// to the end of a line), one whitespace byte, then the rows of R G B bytes. Only maxval 255 (8-bit samples).
#include <string>

#include "image_decoders.hpp"

namespace strata::vision::detail {
namespace {

bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class HeaderReader {
 public:
  HeaderReader(std::span<const uint8_t> bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  // The next header number, after whitespace and comments.
  uint64_t number(const char* field) {
    while (pos_ < bytes_.size()) {
      if (is_space(bytes_[pos_])) {
        ++pos_;
      } else if (bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
    if (pos_ == bytes_.size()) refuse(what_, std::string("truncated PPM header: no ") + field);
    if (bytes_[pos_] < '0' || bytes_[pos_] > '9') {
      refuse(what_, std::string("bad PPM header: ") + field + " is not a decimal number");
    }
    uint64_t v = 0;
    while (pos_ < bytes_.size() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(bytes_[pos_] - '0');
      if (v > (uint64_t{1} << 32)) refuse(what_, std::string("bad PPM header: ") + field + " is too large");
      ++pos_;
    }
    return v;
  }

  // The single whitespace byte that ends the header; returns where the pixels start.
  size_t end_of_header() {
    if (pos_ == bytes_.size()) refuse(what_, "truncated PPM: the header ends without pixel data");
    if (!is_space(bytes_[pos_])) refuse(what_, "bad PPM header: maxval is not followed by whitespace");
    return pos_ + 1;
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view what_;
  size_t pos_ = 2;  // after "P6"
};

}  // namespace

Image decode_ppm(std::span<const uint8_t> bytes, std::string_view what) {
  HeaderReader header(bytes, what);
  const uint64_t width = header.number("width");
  const uint64_t height = header.number("height");
  const uint64_t maxval = header.number("maxval");
  check_dimensions(what, "PPM", width, height);
  if (maxval != 255) {
    refuse(what, "PPM with maxval " + std::to_string(maxval) + ": only 8-bit samples (maxval 255) are read");
  }
  const size_t start = header.end_of_header();
  const uint64_t need = width * height * 3;
  if (bytes.size() - start < need) {
    refuse(what, "truncated PPM: " + std::to_string(width) + "x" + std::to_string(height) + " needs " +
                     std::to_string(need) + " bytes of pixels, the file has " + std::to_string(bytes.size() - start));
  }
  Image image;
  image.width = static_cast<uint32_t>(width);
  image.height = static_cast<uint32_t>(height);
  image.rgb.assign(bytes.begin() + static_cast<std::ptrdiff_t>(start),
                   bytes.begin() + static_cast<std::ptrdiff_t>(start + need));
  return image;
}

}  // namespace strata::vision::detail
