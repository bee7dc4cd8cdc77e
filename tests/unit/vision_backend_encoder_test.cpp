// The vision encoder as backend ops (Projector::encode_on, backend 1.7) against the CPU encoder and against
// llama.cpp: on every backend under test (the reference, cpu_avx2, cuda on the GPU machine) the rows agree with
// Projector::encode within float rounding of a different order, and with llama.cpp's embeddings of the shared tiny
// projector within the CPU encoder's own tolerance. mkmodel's tiny pair (written here) makes the first check
// independent of ../shared; a larger image (many attention columns, merged grids that are not square) too.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine_backends.hpp"
#include "strata/mkmodel.hpp"
#include "strata/vision.hpp"
#include "test_temp_dir.hpp"

namespace {

namespace vision = strata::vision;

// A picture with edges and colour: a gradient, a disc and bars.
vision::Image picture(uint32_t w, uint32_t h) {
  vision::Image im{w, h, std::vector<uint8_t>(size_t{3} * w * h)};
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      uint8_t* p = im.rgb.data() + (size_t{y} * w + x) * 3;
      const int dx = static_cast<int>(x) - static_cast<int>(w / 3), dy = static_cast<int>(y) - static_cast<int>(h / 2);
      const bool disc = dx * dx + dy * dy < static_cast<int>(w * w / 25);
      p[0] = static_cast<uint8_t>(disc ? 240 : (x * 255) / w);
      p[1] = static_cast<uint8_t>(disc ? 200 : (y * 255) / h);
      p[2] = static_cast<uint8_t>(((x / 8) % 2) != 0 ? 30 : 220);
    }
  }
  return im;
}

struct Diff {
  double max = 0.0, mean = 0.0;
};

Diff compare(const vision::Embeddings& a, const vision::Embeddings& b) {
  Diff d;
  EXPECT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size() && i < b.rows.size(); ++i) {
    const double e = std::abs(static_cast<double>(a.rows[i]) - static_cast<double>(b.rows[i]));
    EXPECT_FALSE(std::isnan(a.rows[i])) << i;
    d.max = std::max(d.max, e);
    d.mean += e;
  }
  d.mean /= static_cast<double>(std::max<size_t>(1, a.rows.size()));
  return d;
}

const std::string& tiny_projector() {
  static const std::string path = [] {
    auto s = strata::mkmodel::shape_preset("tiny", strata::Arch::Qwen3VlMoe).value();
    strata::mkmodel::set_layers(s, 3);
    s.n_vocab = 1000;
    const std::string p = strata::testing_support::test_temp_path("vision_backend_encoder", "mmproj.gguf");
    strata::mkmodel::WriteOptions o;
    o.threads = 2;
    strata::mkmodel::write_projector(s, p, o);
    return p;
  }();
  return path;
}

TEST(VisionBackendEncoder, EqualsTheCpuEncoderOnEveryBackend) {
  const vision::Projector projector = vision::Projector::load(tiny_projector());
  for (const auto& [w, h] : {std::pair{64u, 48u}, std::pair{200u, 120u}}) {
    const vision::ProjectorInput input = projector.preprocess(picture(w, h));
    vision::EncodeOptions o;
    o.threads = 2;
    const vision::Embeddings cpu = projector.encode(input, o);
    for (const std::string& name : strata::test::backends_under_test()) {
      auto backend = strata::test::open_backend(name);
      const std::optional<vision::Embeddings> e = projector.encode_on(*backend, input, o);
      ASSERT_TRUE(e.has_value()) << name;
      EXPECT_EQ(e->nx, cpu.nx);
      EXPECT_EQ(e->ny, cpu.ny);
      EXPECT_EQ(e->n_pos, cpu.n_pos);
      EXPECT_EQ(e->width, cpu.width);
      const Diff d = compare(*e, cpu);
      std::cout << name << ", " << w << "x" << h << " (" << cpu.n_tokens() << " tokens): max |diff| " << d.max
                << ", mean " << d.mean << " against the CPU encoder\n";
      EXPECT_LE(d.max, 2e-3) << name;
      EXPECT_LE(d.mean, 2e-4) << name;
      // Twice on the same backend: the same bytes (the weights stay placed; the order is fixed).
      const std::optional<vision::Embeddings> again = projector.encode_on(*backend, input, o);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(again->rows, e->rows) << name;
    }
  }
}

std::string vision_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/data/vision"; }

// The shared tiny projector, its test image and llama.cpp's embeddings of it, when ../shared is here.
struct SharedVision {
  nlohmann::json full;  // image_embeddings.full: a row per image token
  std::optional<vision::Projector> projector;
  vision::ProjectorInput input;
  static std::optional<SharedVision> load() {
    const std::string mmproj = vision_dir() + "/mmproj-qwen3vl-tiny-s1.gguf";
    if (!std::filesystem::exists(mmproj) || !std::filesystem::exists(vision_dir() + "/vl-tiny-s1.json")) return std::nullopt;
    SharedVision v;
    std::ifstream in(vision_dir() + "/vl-tiny-s1.json");
    v.full = nlohmann::json::parse(in)["image_embeddings"]["full"];
    v.projector.emplace(vision::Projector::load(mmproj));
    v.input = v.projector->preprocess(vision::load_image(vision_dir() + "/image-64x48.ppm"));
    return v;
  }
  // Max and mean |difference| of e's rows from llama.cpp's.
  Diff error(const vision::Embeddings& e) const {
    Diff d;
    EXPECT_EQ(e.n_tokens(), full.size());
    size_t count = 0;
    for (size_t t = 0; t < full.size() && t < e.n_tokens(); ++t) {
      for (size_t i = 0; i < full[t].size(); ++i) {
        const double x = std::abs(static_cast<double>(e.row(t)[i]) - full[t][i].get<double>());
        d.max = std::max(d.max, x);
        d.mean += x;
        ++count;
      }
    }
    d.mean /= static_cast<double>(std::max<size_t>(1, count));
    return d;
  }
};

TEST(VisionBackendEncoder, MatchesLlamaCppsEmbeddings) {
  const std::optional<SharedVision> v = SharedVision::load();
  if (!v) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  for (const std::string& name : strata::test::backends_under_test()) {
    auto backend = strata::test::open_backend(name);
    const std::optional<vision::Embeddings> e = v->projector->encode_on(*backend, v->input);
    ASSERT_TRUE(e.has_value()) << name;
    const Diff d = v->error(*e);
    std::cout << name << ": max |error| " << d.max << ", mean " << d.mean << " against llama.cpp's embeddings\n";
    // The CPU encoder's tolerance with llama.cpp's F16 steps emulated (vision_projector_test).
    EXPECT_LE(d.max, 1.5e-3) << name;
    EXPECT_LE(d.mean, 3e-4) << name;
  }
}

// With f16_attention (the engine's choice on a GPU), keys and values go through an f16 cache as llama.cpp's default
// flash attention casts them: the embeddings stay within llama.cpp's own shift between its FA settings (3.0e-3,
// the shared README's yardstick) of its FA-off embeddings, and the same bytes come back on a second run.
TEST(VisionBackendEncoder, F16AttentionStaysWithinLlamaCppsOwnFlashShift) {
  const std::optional<SharedVision> v = SharedVision::load();
  if (!v) GTEST_SKIP() << vision_dir() << ": not here; skipped";
  vision::EncodeOptions o;
  o.f16_attention = true;
  for (const std::string& name : strata::test::backends_under_test()) {
    auto backend = strata::test::open_backend(name);
    const std::optional<vision::Embeddings> e = v->projector->encode_on(*backend, v->input, o);
    ASSERT_TRUE(e.has_value()) << name;
    const std::optional<vision::Embeddings> f32 = v->projector->encode_on(*backend, v->input);
    ASSERT_TRUE(f32.has_value()) << name;
    const Diff d = v->error(*e), moved = compare(*e, *f32);
    std::cout << name << ", f16 attention: max |error| " << d.max << ", mean " << d.mean
              << " against llama.cpp's embeddings; moved max " << moved.max << ", mean " << moved.mean
              << " from the f32 attention\n";
    EXPECT_LE(d.max, 3e-3) << name;
    EXPECT_LE(d.mean, 5e-4) << name;
    EXPECT_GT(moved.max, 0.0) << name << ": f16_attention changed nothing (the keys did not go through f16)";
    const std::optional<vision::Embeddings> again = v->projector->encode_on(*backend, v->input, o);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->rows, e->rows) << name;
  }
}

}  // namespace
