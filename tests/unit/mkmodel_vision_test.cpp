// `strata mkmodel`'s Qwen3-VL pair: the qwen3-vl-30b-a3b shape's plans (the text model, arch qwen3vlmoe, with
// config.json's numbers, and its mmproj projector with llama.cpp's tensor names, shapes and types) without writing
// them; then a small pair written, loaded as `strata run --mmproj --image` loads it (Model::load, Projector::load),
// an image encoded and fed with its deepstack parts, and the library's refusals of a mismatched pair. Needs nothing
// outside the build (the CLI's side is tests/cli/mkmodel_vision.cmake).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "error_text.hpp"
#include "mkmodel_plan_lookup.hpp"
#include "strata/generate.hpp"
#include "strata/gguf.hpp"
#include "strata/mkmodel.hpp"
#include "strata/vision.hpp"
#include "test_temp_dir.hpp"

namespace {

using strata::Arch;
using strata::format::GgmlType;
using strata::mkmodel::ModelSpec;
using strata::mkmodel::PlannedTensor;

using strata::test::by_name;
using strata::test::shape;

uint64_t elements(const PlannedTensor& t) {
  uint64_t n = 1;
  for (uint64_t d : t.ne) n *= d;
  return n;
}

TEST(MkmodelVision, TheShapeIsQwen3VlMoeOnly) {
  EXPECT_EQ(strata::mkmodel::shape_arch("qwen3-vl-30b-a3b"), Arch::Qwen3VlMoe);
  EXPECT_FALSE(strata::mkmodel::shape_preset("qwen3-vl-30b-a3b", Arch::Qwen3Moe).has_value());
  EXPECT_FALSE(strata::mkmodel::shape_preset("qwen3-30b-a3b", Arch::Qwen3VlMoe).has_value());
  EXPECT_NE(strata::mkmodel::shape_names().find("qwen3-vl-30b-a3b"), std::string::npos);
  // The text shapes carry no projector; tiny's qwen3vlmoe does.
  EXPECT_FALSE(shape("qwen3-30b-a3b", Arch::Qwen3Moe).projector.has_value());
  EXPECT_TRUE(shape("tiny", Arch::Qwen3VlMoe).projector.has_value());
}

// Qwen3-VL-30B-A3B (config.json, shapes.cpp): the text model is Qwen3-30B-A3B's tensors and Q4_K_M types with
// M-RoPE sections [24, 20, 20, 0], 3 deepstack parts, rope base 5e6 and 262144 positions; the projector is 27
// blocks 1152 wide, F16 matrices and patch kernels, an F32 48 x 48 position table, deepstack mergers after blocks
// 8, 16 and 24, rows of 2048 x 4. Sizes: 18.56 GB and 1.08 GB (Qwen's published Q4_K_M and F16 mmproj are
// 18.6 GB and 1.08 GB).
TEST(MkmodelVision, PlansAreThePublishedModel) {
  const ModelSpec s = shape("qwen3-vl-30b-a3b", Arch::Qwen3VlMoe);
  const strata::mkmodel::Plan plan = strata::mkmodel::plan_model(s);
  const strata::HParams& hp = plan.hparams;
  EXPECT_EQ(hp.arch, Arch::Qwen3VlMoe);
  EXPECT_EQ(hp.n_layer, 48u);
  EXPECT_EQ(hp.n_embd, 2048u);
  EXPECT_EQ(hp.n_head, 32u);
  EXPECT_EQ(hp.n_head_kv, 4u);
  EXPECT_EQ(hp.head_dim_k, 128u);
  EXPECT_EQ(hp.n_rot, 128u);
  EXPECT_EQ(hp.n_expert, 128u);
  EXPECT_EQ(hp.n_expert_used, 8u);
  EXPECT_EQ(hp.n_ff_exp, 768u);
  EXPECT_EQ(hp.n_vocab, 151936u);
  EXPECT_EQ(hp.n_ctx_train, 262144u);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 5e6f);
  EXPECT_EQ(hp.rope_sections, (std::array<uint32_t, 4>{24, 20, 20, 0}));
  EXPECT_EQ(hp.n_deepstack, 3u);
  EXPECT_EQ(plan.file_bytes, 18555118752u);
  // The same tensors, shapes and types as the text-only Qwen3-30B-A3B.
  const strata::mkmodel::Plan text = strata::mkmodel::plan_model(shape("qwen3-30b-a3b", Arch::Qwen3Moe));
  ASSERT_EQ(plan.tensors.size(), text.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    EXPECT_EQ(plan.tensors[i].name, text.tensors[i].name);
    EXPECT_EQ(plan.tensors[i].ne, text.tensors[i].ne) << plan.tensors[i].name;
    EXPECT_EQ(plan.tensors[i].type, text.tensors[i].type) << plan.tensors[i].name;
  }

  const strata::mkmodel::ProjectorPlan proj = strata::mkmodel::plan_projector(s);
  EXPECT_EQ(proj.tensors.size(), 4u + 27u * 12u + 3u * 6u + 2u + 4u);
  const auto t = by_name(proj.tensors);
  const auto expect = [&t](const std::string& name, GgmlType type, std::vector<uint64_t> ne) {
    ASSERT_TRUE(t.count(name)) << name;
    EXPECT_EQ(t.at(name)->type, type) << name;
    EXPECT_EQ(t.at(name)->ne, ne) << name;
  };
  expect("v.patch_embd.weight", GgmlType::F16, {16, 16, 3, 1152});
  expect("v.patch_embd.weight.1", GgmlType::F16, {16, 16, 3, 1152});
  expect("v.patch_embd.bias", GgmlType::F32, {1152});
  expect("v.position_embd.weight", GgmlType::F32, {1152, 2304});
  expect("v.blk.26.attn_qkv.weight", GgmlType::F16, {1152, 3456});
  expect("v.blk.26.attn_qkv.bias", GgmlType::F32, {3456});
  expect("v.blk.0.ffn_up.weight", GgmlType::F16, {1152, 4304});
  expect("v.blk.0.ffn_down.weight", GgmlType::F16, {4304, 1152});
  expect("v.blk.0.ln1.weight", GgmlType::F32, {1152});
  for (const char* ds : {"v.deepstack.8.", "v.deepstack.16.", "v.deepstack.24."}) {
    expect(std::string(ds) + "norm.weight", GgmlType::F32, {4608});
    expect(std::string(ds) + "fc1.weight", GgmlType::F16, {4608, 4608});
    expect(std::string(ds) + "fc2.weight", GgmlType::F16, {4608, 2048});
    expect(std::string(ds) + "fc2.bias", GgmlType::F32, {2048});
  }
  EXPECT_EQ(t.count("v.deepstack.0.fc1.weight"), 0u);
  expect("v.post_ln.weight", GgmlType::F32, {1152});
  expect("mm.0.weight", GgmlType::F16, {4608, 4608});
  expect("mm.2.weight", GgmlType::F16, {4608, 2048});
  uint64_t params = 0;
  for (const auto& x : proj.tensors) params += elements(x);
  // Qwen3-VL's vision tower with its mergers: 0.54 B, the difference between Qwen3-VL-30B-A3B's 31.07 B and the
  // text model's 30.53 B.
  EXPECT_EQ(params, 538631408u);
  EXPECT_EQ(proj.file_bytes, 1083499488u);

  // --quant f32 makes the projector all F32 too (llama.cpp's --outtype f32).
  ModelSpec f32 = s;
  f32.quant = strata::mkmodel::QuantPreset::F32;
  for (const auto& x : strata::mkmodel::plan_projector(f32).tensors) EXPECT_EQ(x.type, GgmlType::F32) << x.name;
}

void expect_refused(const std::function<void()>& f, const std::string& part) {
  const std::string message = strata::test::error_of(f);
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

// A spec whose pair would not fit together, or a projector on a model that takes none, is refused by name.
TEST(MkmodelVision, MismatchedPairsAreRefused) {
  const ModelSpec s = shape("qwen3-vl-30b-a3b", Arch::Qwen3VlMoe);
  ModelSpec cut = s;
  strata::mkmodel::set_layers(cut, 3);
  expect_refused([&] { strata::mkmodel::plan_model(cut); }, "needs at least 4 blocks");
  ModelSpec two = s;
  two.projector->deepstack_blocks = {8, 16};
  expect_refused([&] { strata::mkmodel::plan_projector(two); }, "2 deepstack mergers");
  expect_refused([&] { strata::mkmodel::plan_model(two); }, "2 deepstack mergers");
  ModelSpec odd = s;
  odd.projector->n_head = 64;  // heads of 18: not a multiple of 4
  expect_refused([&] { strata::mkmodel::plan_projector(odd); }, "multiple of 4");
  expect_refused([&] { strata::mkmodel::plan_projector(shape("qwen3-30b-a3b", Arch::Qwen3Moe)); }, "has none");
  ModelSpec text = shape("qwen3-30b-a3b", Arch::Qwen3Moe);
  text.projector = s.projector;
  expect_refused([&] { strata::mkmodel::plan_model(text); }, "qwen3vlmoe only");
}

// A 64 x 48 picture: a red/green gradient under a blue checkerboard.
strata::vision::Image test_image() {
  strata::vision::Image im;
  im.width = 64;
  im.height = 48;
  for (uint32_t y = 0; y < im.height; ++y) {
    for (uint32_t x = 0; x < im.width; ++x) {
      im.rgb.push_back(static_cast<uint8_t>(255 * x / 63));
      im.rgb.push_back(static_cast<uint8_t>(255 * y / 47));
      im.rgb.push_back(static_cast<uint8_t>(((x / 8 + y / 8) % 2) * 200));
    }
  }
  return im;
}

// The tiny qwen3vlmoe pair cut to 3 blocks (2 deepstack parts) written as the CLI writes it, then loaded and run as
// `strata run --model M --mmproj P --image I` runs it: the widths agree, the vocabulary has the image tokens, the
// picture's 12 rows are finite in every part, and the prompt with the image gives finite logits on every backend
// under test; the same prompt through generate()'s <__media__> marker gives the same ids as feeding it by hand.
TEST(MkmodelVision, WrittenPairLoadsEncodesAndRuns) {
  ModelSpec s = shape("tiny", Arch::Qwen3VlMoe);
  strata::mkmodel::set_layers(s, 3);
  s.n_vocab = 1000;
  const std::string model = strata::testing_support::test_temp_path("mkmodel_vision", "vl-small.gguf");
  const std::string mmproj = strata::testing_support::test_temp_path("mkmodel_vision", "vl-small-mmproj.gguf");
  strata::mkmodel::WriteOptions o;
  o.threads = 2;
  const auto text_stats = strata::mkmodel::write_model(s, model, o);
  const auto proj_stats = strata::mkmodel::write_projector(s, mmproj, o);
  EXPECT_EQ(text_stats.file_bytes, strata::mkmodel::plan_model(s).file_bytes);
  EXPECT_EQ(proj_stats.file_bytes, strata::mkmodel::plan_projector(s).file_bytes);

  const auto m = strata::Model::load(model);
  const strata::HParams& hp = m->hparams();
  EXPECT_EQ(hp.arch, Arch::Qwen3VlMoe);
  EXPECT_EQ(hp.n_layer, 3u);
  EXPECT_EQ(hp.rope_sections, (std::array<uint32_t, 4>{12, 10, 10, 0}));
  EXPECT_EQ(hp.n_deepstack, 2u);
  EXPECT_EQ(m->input_width(), 256u * 3u);
  for (const char* special : {"<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|im_end|>"}) {
    EXPECT_NE(m->tokenizer().find(special), strata::kNoToken) << special;
  }

  const strata::vision::Projector projector = strata::vision::Projector::load(mmproj);
  const strata::vision::ProjectorInfo& info = projector.info();
  EXPECT_EQ(info.width, 64u);
  EXPECT_EQ(info.n_block, 4u);
  EXPECT_EQ(info.out_width, 256u);
  EXPECT_EQ(info.pos_side, 7u);
  EXPECT_EQ(info.deepstack_blocks, (std::vector<uint32_t>{0, 2}));
  EXPECT_TRUE(info.gelu);
  ASSERT_EQ(projector.row_width(), m->input_width());

  strata::vision::EncodeOptions eo;
  eo.threads = 2;
  const strata::vision::Embeddings emb = projector.encode(test_image(), eo);
  ASSERT_EQ(emb.nx, 4u);
  ASSERT_EQ(emb.ny, 3u);
  ASSERT_EQ(emb.width, m->input_width());
  for (size_t part = 0; part < 3; ++part) {
    double sq = 0.0;
    for (size_t tok = 0; tok < emb.n_tokens(); ++tok) {
      for (size_t i = 0; i < emb.part_width; ++i) {
        const float v = emb.row(tok)[part * emb.part_width + i];
        ASSERT_TRUE(std::isfinite(v)) << "token " << tok << " part " << part;
        sq += static_cast<double>(v) * static_cast<double>(v);
      }
    }
    const double rms = std::sqrt(sq / static_cast<double>(emb.n_tokens() * emb.part_width));
    EXPECT_GT(rms, 0.05) << "part " << part;
    EXPECT_LT(rms, 20.0) << "part " << part;
  }

  strata::EngineSettings settings = strata::test::test_settings();
  settings.context = 64;
  settings.threads = 2;
  const strata::TokenId start = m->tokenizer().find("<|vision_start|>"), end = m->tokenizer().find("<|vision_end|>");
  const std::vector<strata::TokenId> prefix = {11, 12, 13}, suffix = {21, 22, 23};
  const strata::Engine::ImageTokens image{emb.rows, emb.nx, emb.ny, emb.n_pos};
  int ran = 0;
  for (const std::string& backend : strata::test::backends_under_test()) {
    if (backend != "reference" && backend != "cpu_avx2") continue;
    SCOPED_TRACE(backend);
    auto e = strata::test::open_engine(model, backend, settings);
    e->feed(0, prefix);
    e->feed(0, std::span<const strata::TokenId>(&start, 1));
    e->feed_image(0, image);
    e->feed(0, std::span<const strata::TokenId>(&end, 1));
    const std::span<const float> logits = e->feed(0, suffix);
    ASSERT_EQ(logits.size(), hp.n_vocab);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
    ++ran;
  }
  EXPECT_GE(ran, 1);

  // generate(): the image at its marker, greedy, as `strata run --image` does.
  auto e = strata::test::open_engine(model, "reference", settings);
  strata::GenerateOptions g;
  g.n_predict = 4;
  g.sampling.temperature = 0.0f;
  g.images.push_back(image);
  const strata::GenerateResult r = strata::generate(*e, 0, "ab <__media__> cd", g, [](std::string_view) {});
  EXPECT_EQ(r.generated_ids.size(), 4u);
  size_t placeholders = 0;
  for (strata::TokenId id : r.prompt_ids) placeholders += id == start ? 1 : 0;
  EXPECT_EQ(placeholders, 1u + emb.n_tokens());  // the start token and the image's placeholders (its id)
}

}  // namespace
