// The experts' host copy and its uploads (issue 29): the mapped GGUF as the host copy (experts.host_copy: file)
// gives the CPU pool the file's own matrices and copies every expert into a slot of the arena's layout, byte for
// byte, through a pinned ring of any size (an expert split across buffers, buffers reused) or from registered
// pieces of the mapping; and a hybrid engine whose host copy is the file adds no second copy of the experts to the
// resident memory.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../../core/src/engine/expert_upload.hpp"
#include "engine_backends.hpp"
#include "stand_in_gpu.hpp"
#include "strata/engine.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/mkmodel.hpp"
#include "strata/model.hpp"
#include "strata/process_memory.hpp"
#include "tiny_moe_model.hpp"

namespace {

namespace fs = std::filesystem;
using strata::experts::ExpertArena;

bool has_cpu_avx2() {
  for (const std::string& b : strata::test::backends_under_test()) {
    if (b == "cpu_avx2") return true;
  }
  return false;
}

TEST(ExpertHostCopy, TheFileGivesTheArenasBytes) {
  const auto model_ptr = strata::Model::load(strata::test::tiny_moe_model());
  const strata::Model& model = *model_ptr;
  const ExpertArena arena(model.weights(), 2);
  const ExpertArena file(model.weights(), ExpertArena::InFile{});
  ASSERT_TRUE(arena.contiguous());
  ASSERT_FALSE(file.contiguous());
  EXPECT_EQ(file.size(), arena.size());
  EXPECT_EQ(file.data(), nullptr);
  size_t experts = 0;
  for (uint32_t il = 0; il < model.weights().layers.size(); ++il) {
    const auto& l = arena.layout(il);
    if (l.bytes == 0) continue;
    for (uint32_t e = 0; e < model.weights().layers[il].routing.n_expert; ++e, ++experts) {
      const strata_expert_weights a = arena.weights(il, e), f = file.weights(il, e);
      EXPECT_EQ(f.gate, model.weights().layers[il].experts.expert(e).gate);  // the file's own bytes, not a copy
      EXPECT_EQ(std::memcmp(a.gate, f.gate, l.up - l.gate), 0);
      EXPECT_EQ(std::memcmp(a.up, f.up, l.down - l.up), 0);
      EXPECT_EQ(std::memcmp(a.down, f.down, l.bytes - l.down), 0);
      EXPECT_EQ(f.gate_type, a.gate_type);
    }
  }
  EXPECT_GT(experts, 0u);
  // Its ranges cover the stacks (merged where adjacent), inside the mapping.
  uint64_t covered = 0;
  for (const ExpertArena::Range& r : file.ranges()) covered += r.bytes;
  EXPECT_GE(covered, file.size());
}

struct UploadCase {
  const char* name;
  bool in_file;
  bool register_file;
  uint64_t ring_bytes;
  uint32_t ring_buffers;
  uint32_t fill_threads = 1;  // with more, every copy is a wide one (the ring filled on that many threads)
};

class ExpertUploads : public ::testing::TestWithParam<UploadCase> {};

TEST_P(ExpertUploads, EverySlotHoldsTheArenasBytes) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const UploadCase& c = GetParam();
  const auto model_ptr = strata::Model::load(strata::test::tiny_moe_model());
  const strata::Model& model = *model_ptr;
  const ExpertArena arena(model.weights(), 2);
  const ExpertArena file(model.weights(), ExpertArena::InFile{});
  const ExpertArena& source = c.in_file ? file : arena;
  strata::test::StandInGpu gpu(strata::test::open_backend("cpu_avx2"));
  strata::ExpertUpload::Options o;
  o.register_file = c.register_file;
  o.ring_bytes = c.ring_bytes;
  o.ring_buffers = c.ring_buffers;
  o.fill_threads = c.fill_threads;
  o.register_piece = 64 << 10;  // several pieces on the tiny model
  strata::ExpertUpload upload(source, gpu, gpu, o);
  strata::DeviceStream stream(gpu);
  for (uint32_t il = 0; il < model.weights().layers.size(); ++il) {
    const auto& l = arena.layout(il);
    if (l.bytes == 0) continue;
    const uint32_t n = model.weights().layers[il].routing.n_expert;
    strata::Buffer<unsigned char> slots(uint64_t{n} * l.bytes, &gpu);
    for (uint32_t e = 0; e < n; ++e) {
      upload.copy(slots.data() + uint64_t{e} * l.bytes, il, e, stream.get(), c.fill_threads > 1);
    }
    upload.drain();
    for (uint32_t e = 0; e < n; ++e) {
      ASSERT_EQ(std::memcmp(slots.data() + uint64_t{e} * l.bytes, arena.expert(il, e), l.bytes), 0)
          << c.name << ": layer " << il << " expert " << e;
    }
  }
  if (!c.in_file) {
    EXPECT_EQ(upload.staged_bytes(), 0u);
    EXPECT_GT(upload.direct_bytes(), 0u);
  } else if (!c.register_file) {
    EXPECT_EQ(upload.direct_bytes(), 0u);
    EXPECT_GT(upload.staged_bytes(), 0u);
    EXPECT_NE(upload.describe().find("pinned"), std::string::npos) << upload.describe();
    EXPECT_EQ(upload.describe().find("filled on 3 threads") != std::string::npos, c.fill_threads == 3) << upload.describe();
  } else {
    // The stand-in registers every piece: matrices inside one are copied directly, those across two are staged.
    EXPECT_GT(upload.direct_bytes(), 0u) << upload.describe();
    EXPECT_NE(upload.describe().find("registered"), std::string::npos) << upload.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(HostCopy, ExpertUploads,
                         ::testing::Values(UploadCase{"arena", false, false, 8 << 20, 4},
                                           UploadCase{"file_ring", true, false, 8 << 20, 4},
                                           UploadCase{"file_small_ring", true, false, 64 << 10, 2},
                                           UploadCase{"file_registered", true, true, 8 << 20, 4},
                                           UploadCase{"file_ring_wide", true, false, 8 << 20, 4, 3}),
                         [](const auto& p) { return std::string(p.param.name); });

// A layer's experts in one call (the hybrid path's PCIe misses): the same bytes as one call each, and the direct
// copies enqueued as one batch: one copy an expert from the arena, three (gate, up, down) from the registered file.
TEST(ExpertHostCopy, ALayersCopiesGoAsOneBatch) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const auto model_ptr = strata::Model::load(strata::test::tiny_moe_model());
  const strata::Model& model = *model_ptr;
  const ExpertArena arena(model.weights(), 2);
  const ExpertArena file(model.weights(), ExpertArena::InFile{});
  for (const bool in_file : {false, true}) {
    strata::test::StandInGpu gpu(strata::test::open_backend("cpu_avx2"));
    strata::ExpertUpload::Options o;
    o.register_file = in_file;  // one piece holds the tiny model's experts: every slice is direct
    strata::ExpertUpload upload(in_file ? file : arena, gpu, gpu, o);
    strata::DeviceStream stream(gpu);
    uint32_t layers = 0;
    for (uint32_t il = 0; il < model.weights().layers.size(); ++il) {
      const auto& l = arena.layout(il);
      if (l.bytes == 0) continue;
      ++layers;
      const uint32_t n = model.weights().layers[il].routing.n_expert;
      strata::Buffer<unsigned char> slots(uint64_t{n} * l.bytes, &gpu);
      std::memset(slots.data(), 0xA5, uint64_t{n} * l.bytes);
      std::vector<strata::ExpertUpload::Target> targets;
      for (uint32_t e = n; e-- > 0;) targets.push_back({slots.data() + uint64_t{e} * l.bytes, e});  // any order
      const uint64_t batches = gpu.batches(), copies = gpu.batched_copies();
      upload.copy_experts(targets, il, stream.get());
      upload.drain();
      EXPECT_EQ(gpu.batches() - batches, 1u) << (in_file ? "file" : "arena") << " layer " << il;
      EXPECT_EQ(gpu.batched_copies() - copies, (in_file ? 3u : 1u) * n) << (in_file ? "file" : "arena") << " layer " << il;
      for (uint32_t e = 0; e < n; ++e) {
        ASSERT_EQ(std::memcmp(slots.data() + uint64_t{e} * l.bytes, arena.expert(il, e), l.bytes), 0)
            << (in_file ? "file" : "arena") << ": layer " << il << " expert " << e;
      }
    }
    EXPECT_GT(layers, 0u);
    EXPECT_EQ(upload.staged_bytes(), 0u) << upload.describe();
  }
}

// Every host copy gives the same logits (the same bytes computed): a 25% cache, half the misses over PCIe, swaps on,
// a 20-token prompt and 8 greedy tokens, in fast mode.
TEST(ExpertHostCopy, EveryHostCopyGivesTheSameLogits) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const auto logits = [](strata::config::HostCopy host_copy) {
    strata::EngineSettings s = strata::test::test_settings();
    s.threads = 2;
    s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
    s.experts.cache.percent = 25;
    s.experts.pcie_frac = 0.5;
    s.experts.adapt_swaps = 4;
    s.experts.host_copy = host_copy;
    strata::Engine e(strata::Model::load(strata::test::tiny_moe_model()),
                     std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
                     strata::test::built_plugins().instantiate("cpu_avx2"));
    EXPECT_TRUE(e.expert_summary(1.0).find(host_copy == strata::config::HostCopy::Arena ? "private memory" : "mapping") !=
                std::string::npos)
        << e.expert_summary(1.0);
    std::vector<strata::TokenId> prompt;
    for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<strata::TokenId>((i * 197 + 3) % 4096));
    std::vector<float> all;
    std::span<const float> l = e.feed(0, prompt);
    for (int i = 0; i < 8; ++i) {
      all.insert(all.end(), l.begin(), l.end());
      const auto next = static_cast<strata::TokenId>(std::max_element(l.begin(), l.end()) - l.begin());
      l = e.feed(0, std::span<const strata::TokenId>(&next, 1));
    }
    all.insert(all.end(), l.begin(), l.end());
    return all;
  };
  const std::vector<float> file = logits(strata::config::HostCopy::File);
  for (strata::config::HostCopy h : {strata::config::HostCopy::Arena, strata::config::HostCopy::FileRegistered,
                                     strata::config::HostCopy::Auto}) {
    const std::vector<float> got = logits(h);
    ASSERT_EQ(got.size(), file.size());
    EXPECT_EQ(std::memcmp(got.data(), file.data(), got.size() * sizeof(float)), 0) << static_cast<int>(h);
  }
}

// experts.host_copy: auto, the default: a model whose experts fit in memory (this tiny one) gets its expert pages
// registered, and the set-up line says why.
TEST(ExpertHostCopy, AutoRegistersAModelThatFitsInMemory) {
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  strata::EngineSettings s = strata::test::test_settings();
  s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
  s.experts.cache.percent = 25;
  EXPECT_EQ(s.experts.host_copy, strata::config::HostCopy::Auto);
  strata::Engine e(strata::Model::load(strata::test::tiny_moe_model()),
                   std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2")), s,
                   strata::test::built_plugins().instantiate("cpu_avx2"));
  const std::string summary = e.expert_summary(1.0);
  EXPECT_NE(summary.find("host_copy auto: registered, the experts fit in memory"), std::string::npos) << summary;
  EXPECT_NE(summary.find(" registered in "), std::string::npos) << summary;
}

// Issue 29 item 2 on the stand-in GPU: the resident memory a hybrid engine adds, less what the stand-in's "device
// memory" (host memory here: dense weights, slots, staging; its resident pages) holds, stays within 1.05 x (file + KV) + 1 GiB at a
// 0%, 25% and 100% cache; and the file as the host copy adds about one expert copy less than an arena.
TEST(HybridResidentMemory, TheFileIsTheOnlyCopyOfTheExperts) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine are part of RSS; measured in plain builds";
#endif
  if (!has_cpu_avx2()) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  // A qwen3moe of about 200 MB (q8_0, fast to write), its experts nearly all of it.
  strata::mkmodel::ModelSpec spec = *strata::mkmodel::shape_preset("tiny", strata::Arch::Qwen3Moe);
  spec.n_layer = 4;
  spec.n_expert = 64;
  spec.n_embd = 512;
  spec.n_ff_exp = 512;
  spec.quant = strata::mkmodel::QuantPreset::Q8_0;
  spec.seed = 5;
  const fs::path path = fs::temp_directory_path() / ("strata_rss_moe_" + std::to_string(::getpid()) + ".gguf");
  strata::mkmodel::write_model(spec, path.string(), {});
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } remove{path};

  const auto added = [&](strata::config::HostCopy host_copy, double percent, uint64_t& file, uint64_t& kv,
                         uint64_t& experts) {
    strata::EngineSettings s = strata::test::test_settings();
    s.threads = 2;
    s.experts.cache.kind = strata::config::CacheSize::Kind::Percent;
    s.experts.cache.percent = percent;
    s.experts.pcie_frac = 0.5;
    s.experts.host_copy = host_copy;
    const uint64_t before = strata::resident_bytes();
    uint64_t device = 0, after = 0;
    {
      auto gpu = std::make_unique<strata::test::StandInGpu>(strata::test::open_backend("cpu_avx2"));
      strata::test::StandInGpu* g = gpu.get();
      strata::Engine e(strata::Model::load(path.string()), std::move(gpu), s,
                       strata::test::built_plugins().instantiate("cpu_avx2"));
      file = e.model().file_bytes();
      kv = e.kv().bytes();
      experts = 0;
      for (const auto& lw : e.model().weights().layers) {
        if (lw.has_experts()) experts += lw.experts.gate->n_bytes + lw.experts.up->n_bytes + lw.experts.down->n_bytes;
      }
      std::vector<strata::TokenId> prompt;
      for (int i = 0; i < 16; ++i) prompt.push_back(static_cast<strata::TokenId>((i * 197 + 3) % 4096));
      std::span<const float> logits = e.feed(0, prompt);
      for (int i = 0; i < 4; ++i) {
        const auto next = static_cast<strata::TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        logits = e.feed(0, std::span<const strata::TokenId>(&next, 1));
      }
      after = strata::resident_bytes();
      device = g->resident_device_bytes();
    }
    const uint64_t grown = after > before ? after - before : 0;
    return grown > device ? grown - device : 0;
  };
  uint64_t file = 0, kv = 0, experts = 0;
  for (double percent : {0.0, 25.0, 100.0}) {
    const uint64_t got = added(strata::config::HostCopy::File, percent, file, kv, experts);
    const double bound = 1.05 * static_cast<double>(file + kv) + double(uint64_t{1} << 30);
    std::printf("hybrid, host copy file, cache %.0f%%: +%s resident beyond the stand-in's device memory, for a %s file "
                "(experts %s) and a %s KV cache; bound %s\n",
                percent, strata::format_mib(got).c_str(), strata::format_mib(file).c_str(),
                strata::format_mib(experts).c_str(), strata::format_mib(kv).c_str(),
                strata::format_mib(static_cast<uint64_t>(bound)).c_str());
    EXPECT_LE(static_cast<double>(got), bound);
    // Tighter than the bound, so that a second copy of the experts would show: file + KV + 5% + 128 MiB.
    EXPECT_LE(static_cast<double>(got), 1.05 * static_cast<double>(file + kv) + double(128u << 20)) << percent << "%";
  }
  const uint64_t file_100 = added(strata::config::HostCopy::File, 100, file, kv, experts);
  const uint64_t arena_100 = added(strata::config::HostCopy::Arena, 100, file, kv, experts);
  std::printf("cache 100%%: the file as the host copy +%s, an arena +%s\n", strata::format_mib(file_100).c_str(),
              strata::format_mib(arena_100).c_str());
  EXPECT_GE(static_cast<double>(arena_100), static_cast<double>(file_100) + 0.8 * static_cast<double>(experts));
}

}  // namespace
