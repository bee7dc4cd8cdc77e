// The expert cache's slot budget: bytes, percent and auto sizes, slot classes for mixed expert sizes, errors; and
// the geometry read from a generated model's real tensors.
#include <gtest/gtest.h>

#include <filesystem>

#include "strata/error.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/slot_budget.hpp"
#include "strata/mkmodel.hpp"
#include "strata/model.hpp"
#include "test_temp_dir.hpp"

namespace ex = strata::experts;
namespace cfg = strata::config;

namespace {

ex::ExpertGeometry uniform_geometry(uint32_t n_layer, uint32_t n_expert, uint64_t bytes) {
  ex::ExpertGeometry g;
  g.layers.assign(n_layer, ex::LayerExperts{n_expert, bytes});
  return g;
}

ex::ExpertGeometry mixed_geometry(std::vector<uint64_t> bytes, uint32_t n_expert = 8) {
  ex::ExpertGeometry g;
  for (uint64_t b : bytes) g.layers.push_back(b == 0 ? ex::LayerExperts{} : ex::LayerExperts{n_expert, b});
  return g;
}

cfg::CacheSize bytes(uint64_t n) { return {cfg::CacheSize::Kind::Bytes, 0, n}; }
cfg::CacheSize percent(double p) { return {cfg::CacheSize::Kind::Percent, p, 0}; }
cfg::CacheSize automatic() { return {cfg::CacheSize::Kind::Auto, 0, 0}; }

// Plenty of room and no margin: sizes are then limited only by what they ask for.
ex::DeviceRoom roomy() {
  ex::DeviceRoom r;
  r.free_bytes = uint64_t{1} << 40;
  r.margin_bytes = 0;
  return r;
}

std::string budget_error(const cfg::CacheSize& size, const ex::ExpertGeometry& g, const ex::DeviceRoom& room) {
  try {
    ex::plan_slot_budget(size, g, room);
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ExpertsBudget, BytesSpreadEvenlyWithTheRemainderToTheFirstLayers) {
  const ex::ExpertGeometry g = uniform_geometry(4, 8, 1000);
  const ex::SlotBudget b = ex::plan_slot_budget(bytes(10500), g, roomy());
  // Two whole rounds of 4000, then 2500 left: layers 0 and 1 get a third slot, 500 bytes stay unused.
  EXPECT_EQ(b.layer_slots, (std::vector<uint32_t>{3, 3, 2, 2}));
  EXPECT_EQ(b.total_slots(), 10u);
  EXPECT_EQ(b.budget_bytes, 10500u);
  EXPECT_EQ(b.used_bytes, 10000u);
  EXPECT_EQ(b.routed_bytes, 32000u);
  ASSERT_EQ(b.classes.size(), 1u);
  EXPECT_EQ(b.classes[0].slot_bytes, 1000u);
  EXPECT_EQ(b.classes[0].first_slot, 0u);
  EXPECT_EQ(b.classes[0].layers, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(b.describe(), "10 slots (9.8 KiB, 31.2% of the routed experts' 31.2 KiB) of 1000 B each");
}

TEST(ExpertsBudget, PercentOfTheRoutedBytes) {
  const ex::ExpertGeometry g = uniform_geometry(4, 8, 1000);
  const ex::SlotBudget quarter = ex::plan_slot_budget(percent(25), g, roomy());
  EXPECT_EQ(quarter.budget_bytes, 8000u);
  EXPECT_EQ(quarter.layer_slots, (std::vector<uint32_t>{2, 2, 2, 2}));
  const ex::SlotBudget none = ex::plan_slot_budget(percent(0), g, roomy());
  EXPECT_EQ(none.total_slots(), 0u);
  EXPECT_EQ(none.used_bytes, 0u);
  const ex::SlotBudget all = ex::plan_slot_budget(percent(100), g, roomy());
  EXPECT_EQ(all.layer_slots, (std::vector<uint32_t>{8, 8, 8, 8}));
}

TEST(ExpertsBudget, MoreThanTheModelIsCappedAtEveryExpert) {
  const ex::ExpertGeometry g = uniform_geometry(2, 4, 1000);
  const ex::SlotBudget b = ex::plan_slot_budget(bytes(uint64_t{1} << 30), g, roomy());
  EXPECT_EQ(b.budget_bytes, 8000u);
  EXPECT_EQ(b.layer_slots, (std::vector<uint32_t>{4, 4}));
  // Capped before the room check: asking for more than the device has is fine when the model is smaller.
  ex::DeviceRoom small = roomy();
  small.free_bytes = 9000;
  EXPECT_EQ(ex::plan_slot_budget(bytes(uint64_t{1} << 30), g, small).total_slots(), 8u);
}

TEST(ExpertsBudget, AutoTakesWhatIsLeftAfterTheDenseWeightsKvActivationsAndMargin) {
  const ex::ExpertGeometry g = uniform_geometry(4, 8, 1000);
  ex::DeviceRoom room;
  room.dense_bytes = 100000;
  room.kv_bytes = 50000;
  room.activation_bytes = 7000;
  room.staging_bytes = 3000;
  room.margin_bytes = 10000;
  room.free_bytes = room.reserved_bytes() + 20999;
  EXPECT_EQ(room.reserved_bytes(), 170000u);
  const ex::SlotBudget b = ex::plan_slot_budget(automatic(), g, room);
  EXPECT_EQ(b.budget_bytes, 20999u);
  EXPECT_EQ(b.layer_slots, (std::vector<uint32_t>{5, 5, 5, 5}));
  room.free_bytes = room.reserved_bytes() + 500;
  EXPECT_EQ(ex::plan_slot_budget(automatic(), g, room).total_slots(), 0u);
  room.free_bytes = uint64_t{1} << 40;
  EXPECT_EQ(ex::plan_slot_budget(automatic(), g, room).budget_bytes, 32000u);
}

TEST(ExpertsBudget, DefaultMarginIsHalfAGibibyte) { EXPECT_EQ(ex::DeviceRoom{}.reserved_bytes(), uint64_t{512} << 20); }

TEST(ExpertsBudget, ErrorsNameTheSizeTheRoomAndTheFix) {
  const ex::ExpertGeometry g = uniform_geometry(48, 128, uint64_t{3} << 20);  // 18 GiB of experts
  ex::DeviceRoom room;
  room.dense_bytes = uint64_t{3} << 30;
  room.kv_bytes = uint64_t{1} << 30;
  room.activation_bytes = uint64_t{64} << 20;
  room.free_bytes = room.reserved_bytes() + (uint64_t{51} << 30) / 10;  // 5.1 GiB after them
  EXPECT_EQ(budget_error(bytes(uint64_t{8} << 30), g, room),
            "experts.cache: 8GiB is more than the 5.1 GiB free after the dense weights (3.0 GiB), KV cache "
            "(1.0 GiB), activations (64.0 MiB) and margin (512.0 MiB); lower it or use auto");
  EXPECT_EQ(budget_error(percent(50), g, room),
            "experts.cache: 50% (9.0 GiB of the routed experts' 18.0 GiB) is more than the 5.1 GiB free after the "
            "dense weights (3.0 GiB), KV cache (1.0 GiB), activations (64.0 MiB) and margin (512.0 MiB); lower it or "
            "use auto");
  EXPECT_EQ(ex::plan_slot_budget(bytes(uint64_t{5} << 30), g, room).total_slots(), 1706u);

  room.free_bytes = uint64_t{4} << 30;
  const std::string dense =
      "experts.cache: the device has 4.0 GiB free, but the dense weights (3.0 GiB), KV cache (1.0 GiB), activations "
      "(64.0 MiB) and margin (512.0 MiB) need 4.6 GiB before any expert slot: lower runtime.context, use "
      "runtime.kv_type q8_0, or use a device with more memory";
  EXPECT_EQ(budget_error(automatic(), g, room), dense);
  EXPECT_EQ(budget_error(percent(0), g, room), dense);
  EXPECT_EQ(budget_error(percent(120), g, roomy()), "experts.cache: 120% is not a share between 0% and 100%");
}

TEST(ExpertsBudget, LayersOfDifferentExpertSizesGetSlotClasses) {
  // q4_K_M-like: layers 1 and 3 have a bigger down matrix; layer 4 is dense.
  const ex::ExpertGeometry g = mixed_geometry({1000, 1200, 1000, 1200, 0});
  const ex::SlotBudget b = ex::plan_slot_budget(bytes(9900), g, roomy());
  // Two rounds of 4400 leave 1100: layer 0 takes one more (1000), layer 1 (1200) does not fit.
  EXPECT_EQ(b.layer_slots, (std::vector<uint32_t>{3, 2, 2, 2, 0}));
  EXPECT_EQ(b.used_bytes, 9800u);
  ASSERT_EQ(b.classes.size(), 2u);
  EXPECT_EQ(b.classes[0].slot_bytes, 1000u);
  EXPECT_EQ(b.classes[0].layers, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(b.classes[0].first_slot, 0u);
  EXPECT_EQ(b.classes[0].n_slots, 5u);
  EXPECT_EQ(b.classes[1].slot_bytes, 1200u);
  EXPECT_EQ(b.classes[1].layers, (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(b.classes[1].first_slot, 5u);
  EXPECT_EQ(b.classes[1].n_slots, 4u);
  EXPECT_EQ(b.layer_class[1], 1u);
  EXPECT_EQ(b.layer_class[2], 0u);
  EXPECT_EQ(b.describe(),
            "9 slots (9.6 KiB, 27.8% of the routed experts' 34.4 KiB) in 2 classes: 5 x 1000 B, 4 x 1.2 KiB");
}

TEST(ExpertsBudget, ALayerThatDoesNotFitLetsASmallerLaterOneIn) {
  const ex::ExpertGeometry g = mixed_geometry({1200, 1000});
  EXPECT_EQ(ex::plan_slot_budget(bytes(3200), g, roomy()).layer_slots, (std::vector<uint32_t>{1, 2}));
}

// The geometry of a real generated file: mkmodel's q4_k_m recipe gives ffn_down_exps q6_K on llama.cpp's
// "more bits" layers (for 4 layers: 2 and 3) and q4_K elsewhere; gate and up are q4_K.
TEST(ExpertsBudget, GeometryOfAGeneratedQ4KMModel) {
  strata::mkmodel::ModelSpec spec = *strata::mkmodel::shape_preset("tiny", strata::Arch::Qwen3Moe);
  spec.quant = strata::mkmodel::QuantPreset::Q4_K_M;
  const std::string path = strata::testing_support::test_temp_path("experts_budget", "tiny-q4km.gguf");
  strata::mkmodel::write_model(spec, path, {});
  const auto model = strata::Model::load(path);
  const ex::ExpertGeometry g = ex::expert_geometry(model->weights());
  ASSERT_EQ(g.n_layer(), 4u);
  // 256x256 matrices: a q4_K row of 256 values is one 144-byte block, a q6_K row one 210-byte block.
  const uint64_t q4k = 256 * 144, q6k = 256 * 210;
  for (uint32_t l = 0; l < 4; ++l) {
    EXPECT_EQ(g.layers[l].n_expert, 8u);
    const bool more_bits = l >= 2;
    EXPECT_EQ(model->weights().layers[l].experts.down->type,
              more_bits ? strata::format::GgmlType::Q6_K : strata::format::GgmlType::Q4_K);
    EXPECT_EQ(g.layers[l].expert_bytes, 2 * q4k + (more_bits ? q6k : q4k)) << "layer " << l;
  }
  EXPECT_EQ(g.routed_bytes(), 8 * (2 * 3 * q4k + 2 * (2 * q4k + q6k)));
  EXPECT_EQ(g.key_space(), (ex::KeySpace{4, 8}));
  const ex::SlotBudget b = ex::plan_slot_budget(percent(50), g, roomy());
  ASSERT_EQ(b.classes.size(), 2u);
  EXPECT_EQ(b.classes[0].layers, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(b.classes[1].layers, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(b.layer_slots, (std::vector<uint32_t>{4, 4, 4, 4}));
  std::filesystem::remove(path);
}
