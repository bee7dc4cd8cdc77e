// runtime.gpu_memory and the model's whole context (issue 28 item 5): the KV cache's bytes at 262,144 positions on
// the qwen3-30b-a3b shape, the split of a 24 GiB card that experts.cache auto logs, the refusal when the KV cache
// alone does not fit under the cap, DeviceMemory's cap arithmetic, and an engine on a stand-in GPU capped so that
// the hybrid path takes what a 262,144-token KV cache leaves, giving the plain cpu_avx2 engine's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/error.hpp"
#include "strata/experts/expert_geometry.hpp"
#include "strata/experts/slot_budget.hpp"
#include "strata/kv_cache.hpp"
#include "strata/log.hpp"
#include "strata/mkmodel.hpp"
#include "strata/tensor_role.hpp"
#include "tiny_moe_model.hpp"

namespace ex = strata::experts;
namespace cfg = strata::config;
using strata::format::GgmlType;

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint32_t kFullContext = 262144;

cfg::CacheSize automatic() { return {cfg::CacheSize::Kind::Auto, 0, 0}; }

// The qwen3-30b-a3b shape as mkmodel lays it out (q4_k_m), without writing its 17 GB.
struct Shape {
  strata::mkmodel::ModelSpec spec;
  uint64_t dense = 0, routed = 0;
  ex::ExpertGeometry geometry;
};

Shape qwen3_30b() {
  Shape s;
  s.spec = *strata::mkmodel::shape_preset("qwen3-30b-a3b", strata::Arch::Qwen3Moe);
  s.spec.quant = strata::mkmodel::QuantPreset::Q4_K_M;
  const strata::mkmodel::Plan plan = strata::mkmodel::plan_model(s.spec);
  std::vector<uint64_t> per_layer(s.spec.n_layer, 0);
  for (const strata::mkmodel::PlannedTensor& t : plan.tensors) {
    const strata::TensorRole role = strata::classify_tensor(t.name);
    if (role.part == strata::TensorPart::RoutedExperts) {
      s.routed += t.n_bytes;
      per_layer[static_cast<size_t>(*role.layer)] += t.n_bytes;
    } else {
      s.dense += t.n_bytes;
    }
  }
  for (uint64_t bytes : per_layer) s.geometry.layers.push_back(ex::LayerExperts{s.spec.n_expert, bytes / s.spec.n_expert});
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "no error";
}

// Memory whose free bytes the test sets: the cap's arithmetic.
class FakeMemory final : public strata::DeviceMemory {
 public:
  uint64_t free = 0;
  void* allocate(uint64_t) override { return nullptr; }
  void* allocate_mapped(uint64_t) override { return nullptr; }
  void release(void*) noexcept override {}
  uint64_t free_bytes() const override { return free; }
  void upload(void*, const void*, uint64_t) override {}
  void download(void*, const void*, uint64_t) override {}
  const std::string& device_name() const override { return name_; }

 private:
  std::string name_ = "fake";
};

}  // namespace

TEST(GpuMemoryCap, KvCacheOfTheWholeContextOnTheQwen3Shape) {
  const Shape s = qwen3_30b();
  ASSERT_EQ(s.spec.n_layer, 48u);
  ASSERT_EQ(s.spec.n_head_kv, 4u);
  ASSERT_EQ(s.spec.head_dim, 128u);
  const uint32_t kv_dim = s.spec.n_head_kv * s.spec.head_dim;
  // q8_0: 34 bytes per 32 values; a key and a value column of 512 values per position and layer. Past 2^32 bytes:
  // a 32-bit product would wrap.
  EXPECT_EQ(strata::KvCache::bytes_for(48, kv_dim, kFullContext, 1, GgmlType::Q8_0), uint64_t{13690208256});
  EXPECT_EQ(strata::KvCache::bytes_for(48, kv_dim, kFullContext, 1, GgmlType::Q8_0), 48ull * 2 * 544 * 262144);
  EXPECT_EQ(strata::KvCache::bytes_for(48, kv_dim, kFullContext, 1, GgmlType::F16), 24 * kGiB);
  EXPECT_EQ(strata::KvCache::bytes_for(48, kv_dim, kFullContext, 4, GgmlType::Q8_0), 4 * uint64_t{13690208256});
  // A real cache of that context on the host (its pages stay untouched): the sizes and the last column's address.
  strata::KvCache kv(2, kv_dim, kFullContext, 1, GgmlType::Q8_0);
  EXPECT_EQ(kv.bytes(), 2ull * 2 * 544 * 262144);
  const strata_tensor last = kv.values(1, 0);
  EXPECT_EQ(last.ne[1], kFullContext);
  EXPECT_EQ(last.nb[1], 544u);
}

TEST(GpuMemoryCap, TheQwen3ShapeAtFullContextOnA24GiBCard) {
  const Shape s = qwen3_30b();
  ex::DeviceRoom room;
  room.cap_bytes = 24 * kGiB;
  room.free_bytes = 24 * kGiB;
  room.dense_bytes = s.dense;
  room.kv_bytes = strata::KvCache::bytes_for(48, 512, kFullContext, 1, GgmlType::Q8_0);
  room.kv_what = "262144 tokens x 1 slot, q8_0";
  room.activation_bytes = uint64_t{100} << 20;
  const ex::SlotBudget b = ex::plan_slot_budget(automatic(), s.geometry, room);
  EXPECT_GT(b.used_bytes, 0u);
  EXPECT_LT(b.used_bytes, s.routed);
  EXPECT_LE(room.reserved_bytes() + b.used_bytes, 24 * kGiB);
  const std::string line = ex::describe_split(automatic(), room, b);
  std::printf("%s\n", line.c_str());
  EXPECT_EQ(line.rfind("experts.cache auto: 24.0 GiB (runtime.gpu_memory 24GiB) = the dense weights ", 0), 0u) << line;
  EXPECT_NE(line.find(" + KV cache 12.8 GiB (262144 tokens x 1 slot, q8_0) + activations 100.0 MiB + margin 512.0 MiB"
                      " + expert slots "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(" of the routed experts' "), std::string::npos) << line;
  EXPECT_NE(line.find(" unused"), std::string::npos) << line;

  // f16 at the same context: 24 GiB of KV cache alone, more than the card.
  room.kv_bytes = strata::KvCache::bytes_for(48, 512, kFullContext, 1, GgmlType::F16);
  room.kv_what = "262144 tokens x 1 slot, f16";
  room.dense_bytes = uint64_t{3} << 29;  // 1.5 GiB, to keep the text fixed
  EXPECT_EQ(error_of([&] { ex::plan_slot_budget(automatic(), s.geometry, room); }),
            "experts.cache: runtime.gpu_memory 24GiB leaves the engine 24.0 GiB of the device, but the dense weights "
            "(1.5 GiB), KV cache (24.0 GiB: 262144 tokens x 1 slot, f16), activations (100.0 MiB) and margin "
            "(512.0 MiB) need 26.1 GiB before any expert slot: lower runtime.context, use runtime.kv_type q8_0, raise "
            "runtime.gpu_memory, or use a device with more memory");
}

TEST(GpuMemoryCap, DeviceMemoryCountsWhatWasPlacedSinceTheMark) {
  FakeMemory mem;
  mem.free = 100 * kGiB;
  EXPECT_EQ(mem.room_bytes(), 100 * kGiB);  // no cap
  mem.cap_at(24 * kGiB);
  EXPECT_EQ(mem.cap(), 24 * kGiB);
  EXPECT_EQ(mem.room_at_mark(), 24 * kGiB);
  mem.free -= 10 * kGiB;  // the engine placed 10 GiB
  EXPECT_EQ(mem.placed_bytes(), 10 * kGiB);
  EXPECT_EQ(mem.room_bytes(), 14 * kGiB);
  mem.free = 5 * kGiB;  // someone else took most of the device: the free memory limits
  EXPECT_EQ(mem.room_bytes(), 0u);
  mem.free = 100 * kGiB;
  mem.cap_at(0);  // no cap: the free memory, and the mark for placed_bytes
  mem.free = 90 * kGiB;
  EXPECT_EQ(mem.room_at_mark(), 100 * kGiB);
  EXPECT_EQ(mem.placed_bytes(), 10 * kGiB);
  EXPECT_EQ(mem.room_bytes(), 90 * kGiB);
  mem.free = 30 * kGiB;
  mem.cap_at(64 * kGiB);  // a cap above the free memory
  EXPECT_EQ(mem.room_at_mark(), 30 * kGiB);
  EXPECT_EQ(mem.room_bytes(), 30 * kGiB);
}

namespace {

bool has_cpu_avx2() {
  for (const std::string& b : strata::test::backends_under_test())
    if (b == "cpu_avx2") return true;
  return false;
}

strata::EngineSettings capped_settings(uint32_t context, uint64_t cap) {
  strata::EngineSettings s = strata::test::test_settings();
  s.context = context;
  s.kv_type = GgmlType::Q8_0;
  s.gpu_memory = cap;
  s.threads = 2;
  s.experts.cache = automatic();
  s.experts.pcie_frac = 0.5;  // no link probe
  return s;
}

std::unique_ptr<strata::Engine> capped_engine(const strata::EngineSettings& s, strata::test::StandInGpu** gpu_out) {
  auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"), 8 * kGiB);
  *gpu_out = gpu.get();
  return std::make_unique<strata::Engine>(strata::Model::load(strata::test::tiny_moe_model()), std::move(gpu), s,
                                          strata::test::built_plugins().instantiate("cpu_avx2"));
}

// A 20-token prompt, then 8 greedy tokens: the ids.
std::vector<strata::TokenId> greedy(strata::Engine& e) {
  std::vector<strata::TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<strata::TokenId>((i * 197 + 3) % 4096));
  std::vector<strata::TokenId> ids;
  std::span<const float> logits = e.feed(0, prompt);
  for (int i = 0; i < 8; ++i) {
    const auto next = static_cast<strata::TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    ids.push_back(next);
    logits = e.feed(0, std::span<const strata::TokenId>(&next, 1));
  }
  return ids;
}

}  // namespace

// The tiny model at 262,144 positions of q8_0 (272 MiB of KV cache) under a cap that leaves the experts a part of
// what they need: the hybrid path takes it, logs the split, stays under the cap, and gives cpu_avx2's ids.
TEST(GpuMemoryCap, AnEngineUnderTheCapTakesWhatTheKvCacheLeaves) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not built here";
  const uint64_t cap = uint64_t{793} << 20;  // about half the tiny model's 3.6 MiB of experts left to the slots
  strata::test::StandInGpu* gpu = nullptr;
  strata::log::set_level(strata::log::Level::Info);
  ::testing::internal::CaptureStderr();
  std::unique_ptr<strata::Engine> e;
  try {
    e = capped_engine(capped_settings(kFullContext, cap), &gpu);
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    throw;
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  const size_t at = log.find("experts.cache auto: 793.0 MiB (runtime.gpu_memory 793MiB) = the dense weights ");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find(" + KV cache 272.0 MiB (262144 tokens x 1 slot, q8_0) + activations "), std::string::npos) << line;
  EXPECT_NE(line.find(" + margin 512.0 MiB + expert slots "), std::string::npos) << line;
  EXPECT_EQ(line.find("100.0% of the routed experts"), std::string::npos) << line;
  EXPECT_NE(line.find("% of the routed experts' 3.6 MiB)"), std::string::npos) << line;
  EXPECT_LE(8 * kGiB - gpu->free_bytes(), cap);
  const std::vector<strata::TokenId> capped = greedy(*e);
  e.reset();
  strata::EngineSettings plain = strata::test::test_settings();
  plain.kv_type = GgmlType::Q8_0;
  auto reference = strata::test::open_engine(strata::test::tiny_moe_model(), "cpu_avx2", plain);
  EXPECT_EQ(capped, greedy(*reference));
}

TEST(GpuMemoryCap, AnEngineRefusesWhenTheKvCacheAloneDoesNotFitUnderTheCap) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not built here";
  strata::test::StandInGpu* gpu = nullptr;
  const std::string error = error_of([&] { capped_engine(capped_settings(kFullContext, uint64_t{256} << 20), &gpu); });
  EXPECT_EQ(error.rfind("experts.cache: runtime.gpu_memory 256MiB leaves the engine 256.0 MiB of the device, but the "
                        "dense weights (",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("KV cache (272.0 MiB: 262144 tokens x 1 slot, q8_0)"), std::string::npos) << error;
  EXPECT_NE(error.find("before any expert slot: lower runtime.context, raise runtime.gpu_memory, or use a device with "
                       "more memory"),
            std::string::npos)
      << error;
}
