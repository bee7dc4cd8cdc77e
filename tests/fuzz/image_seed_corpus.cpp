// Writes the image fuzzer's seed corpus into the folder argv[1]: small PNGs of every colour type and bit depth the
// decoder converts (grey, grey with alpha, palette, RGB, RGBA; 8 and 16 bits; one interlaced), JPEGs (baseline,
// progressive, grey, CMYK) and a binary PPM, each drawn here and encoded by libpng and libjpeg.
#include <png.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "image_writers.hpp"

namespace {

void write(const std::filesystem::path& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// w x h samples of `channels` values of `bytes` each: a gradient, so that filters and scans have work to do.
std::vector<uint8_t> samples(uint32_t w, uint32_t h, int channels, int bytes) {
  std::vector<uint8_t> out;
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < channels * bytes; ++c) out.push_back(static_cast<uint8_t>(17 * x + 29 * y + 53 * c));
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  namespace test = strata::test;
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  write(dir, "grey8.png", test::make_png(5, 3, 8, PNG_COLOR_TYPE_GRAY, samples(5, 3, 1, 1)));
  write(dir, "grey-alpha16.png", test::make_png(4, 3, 16, PNG_COLOR_TYPE_GRAY_ALPHA, samples(4, 3, 2, 2)));
  write(dir, "palette4.png",
        test::make_png(6, 2, 4, PNG_COLOR_TYPE_PALETTE, {0x01, 0x23, 0x00, 0x32, 0x10, 0x03},
                       {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}}));
  write(dir, "rgb8.png", test::make_png(7, 5, 8, PNG_COLOR_TYPE_RGB, samples(7, 5, 3, 1)));
  write(dir, "rgba16.png", test::make_png(3, 3, 16, PNG_COLOR_TYPE_RGB_ALPHA, samples(3, 3, 4, 2)));
  write(dir, "rgb8-adam7.png", test::make_png(9, 9, 8, PNG_COLOR_TYPE_RGB, samples(9, 9, 3, 1), {}, true));
  strata::vision::Image image;
  image.width = 16;
  image.height = 12;
  image.rgb = samples(16, 12, 3, 1);
  write(dir, "baseline.jpg", test::make_jpeg(image, 75));
  write(dir, "progressive.jpg", test::make_jpeg(image, 60, true));
  write(dir, "grey.jpg", test::make_jpeg(image, 90, false, test::JpegColors::Grey));
  write(dir, "cmyk.jpg", test::make_jpeg(image, 90, false, test::JpegColors::Cmyk));
  std::vector<uint8_t> ppm = {'P', '6', '\n', '4', ' ', '2', '\n', '2', '5', '5', '\n'};
  const std::vector<uint8_t> pixels = samples(4, 2, 3, 1);
  ppm.insert(ppm.end(), pixels.begin(), pixels.end());
  write(dir, "small.ppm", ppm);
  return 0;
}
