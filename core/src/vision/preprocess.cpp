// The projector's input as llama.cpp's libmtmd makes it for qwen3vl_merger: Qwen's smart resize target, a
// bilinear uint8 resize onto a black canvas, normalization by the file's mean and std. Float32 throughout, in
// llama.cpp's order of operations (../shared/data/vision/README.md, steps 1 to 3, reproduces its bytes exactly).
#include <algorithm>
#include <cmath>

#include "projector_weights.hpp"
#include "strata/error.hpp"

namespace strata::vision {

Size smart_resize_target(Size input, const ResizeLimits& limits) {
  if (input.width == 0 || input.height == 0) {
    throw Error("smart resize of a " + std::to_string(input.width) + "x" + std::to_string(input.height) +
                " image: an image needs at least one pixel");
  }
  const auto a = static_cast<int64_t>(limits.align);
  const float af = static_cast<float>(limits.align);
  const auto round_by = [&](float x) { return static_cast<int64_t>(std::round(x / af)) * a; };
  const auto ceil_by = [&](float x) { return static_cast<int64_t>(std::ceil(x / af)) * a; };
  const auto floor_by = [&](float x) { return static_cast<int64_t>(std::floor(x / af)) * a; };
  const float w = static_cast<float>(input.width), h = static_cast<float>(input.height);

  int64_t w_bar = std::max(a, round_by(w));
  int64_t h_bar = std::max(a, round_by(h));
  if (w_bar * h_bar > static_cast<int64_t>(limits.max_pixels)) {
    const float beta = std::sqrt(h * w / static_cast<float>(limits.max_pixels));
    h_bar = std::max(a, floor_by(h / beta));
    w_bar = std::max(a, floor_by(w / beta));
  } else if (w_bar * h_bar < static_cast<int64_t>(limits.min_pixels)) {
    const float beta = std::sqrt(static_cast<float>(limits.min_pixels) / (h * w));
    h_bar = ceil_by(h * beta);
    w_bar = ceil_by(w * beta);
  }
  return Size{static_cast<uint32_t>(w_bar), static_cast<uint32_t>(h_bar)};
}

namespace {

float lerp(float a, float b, float t) { return a + (b - a) * t; }

// Corner-aligned bilinear resize, values truncated to uint8.
Image resize_bilinear(const Image& src, uint32_t width, uint32_t height) {
  Image dst;
  dst.width = width;
  dst.height = height;
  dst.rgb.resize(static_cast<size_t>(width) * height * 3);
  const auto sw = static_cast<int64_t>(src.width), sh = static_cast<int64_t>(src.height);
  const float rx = width > 1 ? static_cast<float>(sw - 1) / static_cast<float>(width - 1) : 0.0f;
  const float ry = height > 1 ? static_cast<float>(sh - 1) / static_cast<float>(height - 1) : 0.0f;
  const auto at = [&](int64_t x, int64_t y, int c) {
    return static_cast<float>(src.rgb[static_cast<size_t>((y * sw + x) * 3 + c)]);
  };
  for (uint32_t y = 0; y < height; ++y) {
    const float py = static_cast<float>(y) * ry;
    const int64_t y0 = std::min(static_cast<int64_t>(py), sh - 1);
    const int64_t y1 = std::min(y0 + 1, sh - 1);
    const float fy = py - static_cast<float>(y0);
    for (uint32_t x = 0; x < width; ++x) {
      const float px = static_cast<float>(x) * rx;
      const int64_t x0 = std::min(static_cast<int64_t>(px), sw - 1);
      const int64_t x1 = std::min(x0 + 1, sw - 1);
      const float fx = px - static_cast<float>(x0);
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(at(x0, y0, c), at(x1, y0, c), fx);
        const float bottom = lerp(at(x0, y1, c), at(x1, y1, c), fx);
        dst.rgb[(static_cast<size_t>(y) * width + x) * 3 + static_cast<size_t>(c)] =
            static_cast<uint8_t>(lerp(top, bottom, fy));
      }
    }
  }
  return dst;
}

}  // namespace

Image resize_padded(const Image& image, Size target) {
  if (image.width == 0 || image.height == 0 || image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3) {
    throw Error("resize: the image is empty or its pixel bytes do not match its " + std::to_string(image.width) +
                "x" + std::to_string(image.height) + " size");
  }
  if (target.width == 0 || target.height == 0) throw Error("resize: the target size is empty");
  if (image.width == target.width && image.height == target.height) return image;
  const float scale = std::min(static_cast<float>(target.width) / static_cast<float>(image.width),
                               static_cast<float>(target.height) / static_cast<float>(image.height));
  const auto fit = [&](uint32_t side, uint32_t limit) {
    const auto n = static_cast<int64_t>(std::ceil(static_cast<float>(side) * scale));
    return static_cast<uint32_t>(std::clamp<int64_t>(n, 1, limit));
  };
  const uint32_t w = fit(image.width, target.width), h = fit(image.height, target.height);
  const Image picture = resize_bilinear(image, w, h);
  if (w == target.width && h == target.height) return picture;

  Image canvas;
  canvas.width = target.width;
  canvas.height = target.height;
  canvas.rgb.assign(static_cast<size_t>(target.width) * target.height * 3, 0);
  const uint32_t ox = (target.width - w) / 2, oy = (target.height - h) / 2;
  for (uint32_t y = 0; y < h; ++y) {
    std::copy_n(picture.rgb.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(y) * w * 3), w * 3,
                canvas.rgb.begin() + static_cast<std::ptrdiff_t>(((static_cast<size_t>(y) + oy) * target.width + ox) * 3));
  }
  return canvas;
}

std::vector<float> normalize(const Image& image, const float (&mean)[3], const float (&std)[3]) {
  const size_t n = static_cast<size_t>(image.width) * image.height;
  if (image.rgb.size() != n * 3) throw Error("normalize: the image's pixel bytes do not match its size");
  std::vector<float> planes(n * 3);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < 3; ++c) {
      planes[c * n + i] = (static_cast<float>(image.rgb[i * 3 + c]) / 255.0f - mean[c]) / std[c];
    }
  }
  return planes;
}

ProjectorInput Projector::preprocess(const Image& image) const {
  const ProjectorInfo& info = weights_->info;
  ProjectorInput input;
  input.size = smart_resize_target(Size{image.width, image.height}, resize_limits());
  input.planes = normalize(resize_padded(image, input.size), info.mean, info.std);
  return input;
}

}  // namespace strata::vision
