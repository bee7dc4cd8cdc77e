// vision::decode_image and load_image: the test image of ../shared/data/vision (relative to the source tree) as PPM
// and PNG, PNGs of other colour types and bit depths made here with libpng, a JPEG made here with libjpeg, and bad
// inputs, each refused with a strata::Error naming the input and the problem. The shared-data cases skip where
// the folder is missing.
#include <gtest/gtest.h>

#include <png.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "image_writers.hpp"
#include "strata/vision.hpp"
#include "test_temp_dir.hpp"

namespace {

namespace vision = strata::vision;

std::string vision_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision"; }
bool have(const std::string& name) { return std::filesystem::exists(vision_dir() + "/" + name); }

// The README's formula for the test image.
std::vector<uint8_t> expected_test_image() {
  std::vector<uint8_t> rgb;
  for (int y = 0; y < 48; ++y) {
    for (int x = 0; x < 64; ++x) {
      rgb.push_back(static_cast<uint8_t>(255 * x / 63));
      rgb.push_back(static_cast<uint8_t>(255 * y / 47));
      rgb.push_back(static_cast<uint8_t>(200 * ((x / 8 + y / 8) % 2) + (x * y) % 55));
    }
  }
  return rgb;
}

// The message of the strata::Error that `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

using strata::test::make_jpeg;
using strata::test::make_png;

uint32_t crc32_of(const uint8_t* data, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

vision::Image test_image() {
  vision::Image image;
  image.width = 64;
  image.height = 48;
  image.rgb = expected_test_image();
  return image;
}

// --- the shared test image ---

TEST(VisionImage, PpmAndPngOfTheTestImageDecodeToTheSameBytes) {
  if (!have("image-64x48.ppm") || !have("image-64x48.png")) GTEST_SKIP() << vision_dir() << " is missing";
  const vision::Image ppm = vision::load_image(vision_dir() + "/image-64x48.ppm");
  const vision::Image png = vision::load_image(vision_dir() + "/image-64x48.png");
  EXPECT_EQ(ppm.width, 64u);
  EXPECT_EQ(ppm.height, 48u);
  ASSERT_EQ(ppm.rgb.size(), 9216u);
  EXPECT_EQ(std::accumulate(ppm.rgb.begin(), ppm.rgb.end(), uint64_t{0}), 1164996u);
  EXPECT_EQ(ppm.rgb, expected_test_image());
  EXPECT_EQ(png.width, 64u);
  EXPECT_EQ(png.height, 48u);
  EXPECT_EQ(png.rgb, ppm.rgb);
}

TEST(VisionImage, PpmHeaderWithComments) {
  std::string text = "P6\n# a comment\n2 # width\n1\n255\n";
  text += std::string("\x01\x02\x03\xfd\xfe\xff", 6);
  const vision::Image image = vision::decode_image(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), "ppm");
  EXPECT_EQ(image.width, 2u);
  EXPECT_EQ(image.height, 1u);
  EXPECT_EQ(image.rgb, (std::vector<uint8_t>{1, 2, 3, 253, 254, 255}));
}

// --- PNG colour types and bit depths, all to 8-bit RGB ---

TEST(VisionImage, PngGreyPaletteSixteenBitAndAlphaBecomeRgb) {
  {  // 8-bit grey
    const vision::Image im = vision::decode_image(make_png(2, 1, 8, PNG_COLOR_TYPE_GRAY, {10, 200}), "grey");
    EXPECT_EQ(im.rgb, (std::vector<uint8_t>{10, 10, 10, 200, 200, 200}));
  }
  {  // 4-bit palette
    const std::vector<strata::test::PaletteColor> palette = {{1, 2, 3}, {40, 50, 60}, {250, 251, 252}};
    const vision::Image im =
        vision::decode_image(make_png(3, 1, 4, PNG_COLOR_TYPE_PALETTE, {0x12, 0x00}, palette), "palette");
    EXPECT_EQ(im.rgb, (std::vector<uint8_t>{40, 50, 60, 250, 251, 252, 1, 2, 3}));
  }
  {  // 16-bit grey with alpha: the high byte, alpha dropped
    const vision::Image im = vision::decode_image(
        make_png(2, 1, 16, PNG_COLOR_TYPE_GRAY_ALPHA, {0x12, 0x34, 0x00, 0x00, 0xab, 0xff, 0x80, 0x00}), "grey-alpha");
    EXPECT_EQ(im.rgb, (std::vector<uint8_t>{0x12, 0x12, 0x12, 0xab, 0xab, 0xab}));
  }
  {  // 8-bit RGBA: alpha dropped, not composited
    const vision::Image im =
        vision::decode_image(make_png(1, 2, 8, PNG_COLOR_TYPE_RGB_ALPHA, {9, 8, 7, 0, 100, 110, 120, 255}), "rgba");
    EXPECT_EQ(im.rgb, (std::vector<uint8_t>{9, 8, 7, 100, 110, 120}));
  }
  {  // 16-bit RGB
    const vision::Image im = vision::decode_image(
        make_png(1, 1, 16, PNG_COLOR_TYPE_RGB, {0xfe, 0x01, 0x7f, 0xff, 0x00, 0xff}), "rgb16");
    EXPECT_EQ(im.rgb, (std::vector<uint8_t>{0xfe, 0x7f, 0x00}));
  }
}

// --- JPEG ---

TEST(VisionImage, JpegMadeByLibjpegDecodesToClosePixels) {
  // Smooth gradients (JPEG keeps them within a level or two; the test image's blue sawtooth it would not).
  vision::Image original;
  original.width = 64;
  original.height = 48;
  for (uint32_t y = 0; y < 48; ++y) {
    for (uint32_t x = 0; x < 64; ++x) {
      original.rgb.push_back(static_cast<uint8_t>(4 * x));
      original.rgb.push_back(static_cast<uint8_t>(5 * y));
      original.rgb.push_back(static_cast<uint8_t>(128 + x - y));
    }
  }
  const std::vector<uint8_t> jpeg = make_jpeg(original, 95);
  const vision::Image decoded = vision::decode_image(jpeg, "test.jpg");
  ASSERT_EQ(decoded.width, 64u);
  ASSERT_EQ(decoded.height, 48u);
  ASSERT_EQ(decoded.rgb.size(), original.rgb.size());
  double sum_abs = 0.0;
  int max_abs = 0;
  for (size_t i = 0; i < original.rgb.size(); ++i) {
    const int d = std::abs(int{decoded.rgb[i]} - int{original.rgb[i]});
    sum_abs += d;
    max_abs = std::max(max_abs, d);
  }
  const double mean_abs = sum_abs / static_cast<double>(original.rgb.size());
  std::cout << "JPEG q95 round trip: mean |error| " << mean_abs << ", max " << max_abs << " levels\n";
  EXPECT_LT(mean_abs, 2.0);
  EXPECT_LE(max_abs, 12);

  const std::string path = strata::testing_support::test_temp_path("vision", "test.jpg");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
  EXPECT_EQ(vision::load_image(path).rgb, decoded.rgb);
}

// --- bad input ---

TEST(VisionImage, TruncatedPngIsRefused) {
  std::vector<uint8_t> png = make_png(64, 48, 8, PNG_COLOR_TYPE_RGB, expected_test_image());
  png.resize(png.size() / 2);
  const std::string message = error_of([&] { vision::decode_image(png, "half.png"); });
  EXPECT_NE(message.find("half.png: "), std::string::npos) << message;
  EXPECT_NE(message.find("PNG"), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

// A small file whose header promises a large image is refused before its pixels are allocated: 10000 x 10000
// RGB (300 MB) cannot come from a few hundred bytes of PNG or JPEG.
TEST(VisionImage, HeaderPromisingMoreThanTheBytesHoldIsRefused) {
  std::vector<uint8_t> png = make_png(2, 1, 8, PNG_COLOR_TYPE_GRAY, {10, 200});
  for (size_t at : {size_t{16}, size_t{20}}) {  // IHDR's width and height: 10000 each, the CRC made right again
    for (int i = 0; i < 4; ++i) png[at + static_cast<size_t>(i)] = static_cast<uint8_t>(10000u >> (24 - 8 * i));
  }
  const uint32_t crc = crc32_of(png.data() + 12, 17);
  for (int i = 0; i < 4; ++i) png[29 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  std::string message = error_of([&] { vision::decode_image(png, "big.png"); });
  EXPECT_NE(message.find("big.png: PNG header says 10000x10000, which " + std::to_string(png.size()) +
                         " bytes cannot hold"),
            std::string::npos)
      << message;

  vision::Image image;
  image.width = 8;
  image.height = 8;
  image.rgb.assign(8 * 8 * 3, 7);
  std::vector<uint8_t> jpeg = make_jpeg(image, 90);
  // SOF0's height and width (after its marker, length and precision): 10000 each.
  size_t sof = 0;
  while (sof + 1 < jpeg.size() && !(jpeg[sof] == 0xff && jpeg[sof + 1] == 0xc0)) ++sof;
  ASSERT_LT(sof + 9, jpeg.size());
  for (size_t at : {sof + 5, sof + 7}) {
    jpeg[at] = static_cast<uint8_t>(10000 >> 8);
    jpeg[at + 1] = static_cast<uint8_t>(10000 & 0xff);
  }
  message = error_of([&] { vision::decode_image(jpeg, "big.jpg"); });
  EXPECT_NE(message.find("big.jpg: JPEG header says 10000x10000"), std::string::npos) << message;

  // An honest file passes the check.
  EXPECT_EQ(vision::decode_image(make_png(64, 48, 8, PNG_COLOR_TYPE_RGB, expected_test_image()), "ok.png").width, 64u);
}

TEST(VisionImage, PngWithABadHeaderIsRefused) {
  std::vector<uint8_t> png = make_png(2, 1, 8, PNG_COLOR_TYPE_GRAY, {10, 200});
  png[20] ^= 0xff;  // inside IHDR: its CRC no longer matches
  const std::string message = error_of([&] { vision::decode_image(png, "crc.png"); });
  EXPECT_NE(message.find("crc.png: bad PNG: "), std::string::npos) << message;
}

TEST(VisionImage, JpegWithGarbageIsRefused) {
  std::vector<uint8_t> garbage = {0xff, 0xd8, 0xff, 0xe0};
  for (int i = 0; i < 300; ++i) garbage.push_back(static_cast<uint8_t>((i * 7919 + 13) % 251));
  std::string message = error_of([&] { vision::decode_image(garbage, "garbage.jpg"); });
  EXPECT_NE(message.find("garbage.jpg: bad JPEG: "), std::string::npos) << message;

  std::vector<uint8_t> jpeg = make_jpeg(test_image(), 90);
  jpeg.resize(jpeg.size() * 2 / 3);
  message = error_of([&] { vision::decode_image(jpeg, "cut.jpg"); });
  EXPECT_NE(message.find("cut.jpg: bad JPEG: "), std::string::npos) << message;
}

TEST(VisionImage, CmykJpegIsRefused) {
  vision::Image image;
  image.width = 8;
  image.height = 8;
  image.rgb.assign(8 * 8 * 3, 100);
  const std::vector<uint8_t> cmyk = make_jpeg(image, 90, false, strata::test::JpegColors::Cmyk);
  const std::string message = error_of([&] { vision::decode_image(cmyk, "cmyk.jpg"); });
  EXPECT_NE(message.find("cmyk.jpg: CMYK JPEG"), std::string::npos) << message;
}

TEST(VisionImage, TextFileIsRefused) {
  const std::string path = strata::testing_support::test_temp_path("vision", "notes.txt");
  std::ofstream(path) << "hello, this is not an image\n";
  const std::string message = error_of([&] { vision::load_image(path); });
  EXPECT_NE(message.find(path + ": not an image"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { vision::load_image(path + ".missing"); }).find("cannot open image"), std::string::npos);
  EXPECT_NE(error_of([&] { vision::decode_image({}, "empty"); }).find("empty: empty"), std::string::npos);
}

TEST(VisionImage, ZeroSizeAndTruncatedPpmAreRefused) {
  const auto decode = [](const std::string& text) {
    return error_of([&] {
      vision::decode_image(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), "x.ppm");
    });
  };
  EXPECT_NE(decode("P6\n0 48\n255\n").find("x.ppm: PPM image of size 0x48"), std::string::npos) << decode("P6\n0 48\n255\n");
  EXPECT_NE(decode("P6\n2 2\n255\nabc").find("x.ppm: truncated PPM"), std::string::npos);
  EXPECT_NE(decode("P6\n2 2\n65535\n").find("maxval 65535"), std::string::npos);
  EXPECT_NE(decode("P6\n2").find("truncated PPM header"), std::string::npos);
  EXPECT_NE(decode("P6\n100000 100000\n255\n").find("too large"), std::string::npos);
  EXPECT_NE(decode("P5\n2 2\n255\n....").find("only binary PPM (P6)"), std::string::npos);
  // A zero-size PNG cannot be written with libpng (it refuses width 0), so its IHDR is patched (CRC fixed).
  std::vector<uint8_t> png = make_png(1, 1, 8, PNG_COLOR_TYPE_GRAY, {0});
  png[16] = png[17] = png[18] = png[19] = 0;  // width
  const uint32_t crc = crc32_of(png.data() + 12, 17);
  for (int i = 0; i < 4; ++i) png[29 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  const std::string message = error_of([&] { vision::decode_image(png, "zero.png"); });
  EXPECT_NE(message.find("zero.png: "), std::string::npos) << message;
}

}  // namespace
