// libFuzzer target for the image decoders (vision::decode_image: PNG through libpng, JPEG through libjpeg, binary
// PPM by hand): any bytes give an 8-bit RGB image within the size limit, or a strata::Error that names the input;
// never another exception, a crash, a leak or a hang (libpng and libjpeg report errors by longjmp).
#include <cstdint>
#include <span>
#include <string_view>

#include "strata/error.hpp"
#include "strata/vision.hpp"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const strata::vision::Image image = strata::vision::decode_image(std::span<const uint8_t>(data, size), "fuzz");
    require(image.width > 0 && image.height > 0);
    require(uint64_t{image.width} * image.height <= uint64_t{1} << 27);
    require(image.rgb.size() == size_t{image.width} * image.height * 3);
  } catch (const strata::Error& e) {
    require(std::string_view(e.what()).starts_with("fuzz: "));
  }
  return 0;
}
