// vision::smart_resize_target, resize_padded and normalize: the README cases of ../shared/data/vision (relative to
// the source tree; its steps 1 to 3 reproduce llama.cpp's projector input bit for bit) and cases worked by hand.
// The shared-data cases skip where the folder is missing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "strata/vision.hpp"

namespace {

namespace vision = strata::vision;

std::string vision_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision"; }
bool have_data() {
  return std::filesystem::exists(vision_dir() + "/image-64x48.ppm") &&
         std::filesystem::exists(vision_dir() + "/image-64x48-resized-128x96.ppm") &&
         std::filesystem::exists(vision_dir() + "/vl-tiny-s1.json");
}

vision::Size target(uint32_t w, uint32_t h) { return vision::smart_resize_target({w, h}, vision::ResizeLimits{}); }

TEST(VisionPreprocess, SmartResizeTargets) {
  EXPECT_EQ(target(64, 48), (vision::Size{128, 96}));  // 64x64 < 8192 pixels: raised, beta 1.63299
  // Already within the limits: each side to the nearest multiple of 32, halves away from zero (30.5 -> 31).
  EXPECT_EQ(target(976, 784), (vision::Size{992, 800}));
  EXPECT_EQ(target(1024, 768), (vision::Size{1024, 768}));
  // Huge: 10016x8000 > 4096*32^2, beta = sqrt(8000*10000/4194304) = 4.36732: floor(1831.8/32), floor(2289.7/32).
  EXPECT_EQ(target(10000, 8000), (vision::Size{2272, 1824}));
  // Tiny: 32x32 < 8192, beta = sqrt(8192/100) = 9.05097: ceil(90.51/32) = 3 both ways.
  EXPECT_EQ(target(10, 10), (vision::Size{96, 96}));
  // A thin strip: 4000x20 -> 4000x32 (round(0.625) = 1); within the limits.
  EXPECT_EQ(target(4000, 20), (vision::Size{4000, 32}));
  EXPECT_THROW(target(0, 10), strata::Error);
}

TEST(VisionPreprocess, ResizedBytesEqualLlamaCpps) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << " is missing";
  const vision::Image image = vision::load_image(vision_dir() + "/image-64x48.ppm");
  const vision::Image want = vision::load_image(vision_dir() + "/image-64x48-resized-128x96.ppm");
  const vision::Image got = vision::resize_padded(image, target(image.width, image.height));
  EXPECT_EQ(got.width, 128u);
  EXPECT_EQ(got.height, 96u);
  EXPECT_EQ(std::accumulate(got.rgb.begin(), got.rgb.end(), uint64_t{0}), 4644442u);
  EXPECT_EQ(got.rgb, want.rgb);
}

TEST(VisionPreprocess, NormalizedPlanesMatchTheReference) {
  if (!have_data()) GTEST_SKIP() << vision_dir() << " is missing";
  std::ifstream in(vision_dir() + "/vl-tiny-s1.json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  const vision::Image resized = vision::load_image(vision_dir() + "/image-64x48-resized-128x96.ppm");
  const float half[3] = {0.5f, 0.5f, 0.5f};
  const std::vector<float> planes = vision::normalize(resized, half, half);
  ASSERT_EQ(planes.size(), 3u * 128 * 96);
  double sum = 0.0;
  for (float v : planes) sum += static_cast<double>(v);
  EXPECT_NEAR(sum, ref["preprocess"]["pixels_sum"].get<double>(), 5e-3);  // printed with 7 digits
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(planes[i], ref["preprocess"]["r_plane_first8"][i].get<double>(), 1e-7) << i;
  }
}

TEST(VisionPreprocess, PaddingCentresThePicture) {
  vision::Image image;
  image.width = 4;
  image.height = 2;
  for (int i = 0; i < 24; ++i) image.rgb.push_back(static_cast<uint8_t>(10 + i));
  // To 4x4: scale min(1, 2) = 1, the picture stays 4x2 (corner-aligned ratios of exactly 1) at offset (0, 1).
  const vision::Image out = vision::resize_padded(image, {4, 4});
  ASSERT_EQ(out.rgb.size(), 48u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(out.rgb[i], 0) << i;
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(out.rgb[12 + i], image.rgb[i]) << i;
  for (size_t i = 36; i < 48; ++i) EXPECT_EQ(out.rgb[i], 0) << i;
  // Same size: unchanged.
  EXPECT_EQ(vision::resize_padded(image, {4, 2}).rgb, image.rgb);
  // Upscaling by 3 along x (ratio (4-1)/(10-1) = 1/3): x = 1 samples between columns 0 and 1, truncated.
  const vision::Image wide = vision::resize_padded(image, {10, 5});
  EXPECT_EQ(wide.width, 10u);
  EXPECT_EQ(wide.height, 5u);
  EXPECT_EQ(wide.rgb[0], 10);
  EXPECT_EQ(wide.rgb[3], 11);  // 10 + (13 - 10) / 3 = 11
}

}  // namespace
