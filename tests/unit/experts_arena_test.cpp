// The experts' host copy: each expert's [gate | up | down] bytes equal its slices of the model's stacked tensors; a
// file arena on tmpfs is filled once and mapped as it is by the next engine of the same model, refilled when its
// header says another model or an interrupted fill, and refused off tmpfs.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "strata/error.hpp"
#include "strata/experts/expert_arena.hpp"
#include "strata/model.hpp"
#include "tiny_moe_model.hpp"

namespace {

using strata::experts::ExpertArena;

const strata::Model& tiny() {
  static const std::unique_ptr<strata::Model> model = strata::Model::load(strata::test::tiny_moe_model());
  return *model;
}

bool on_tmpfs(const std::filesystem::path& folder) {
  struct statfs fs {};
  return statfs(folder.c_str(), &fs) == 0 && static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC;
}

void expect_holds_the_model(const ExpertArena& arena) {
  const strata::ModelWeights& w = tiny().weights();
  size_t checked = 0;
  for (uint32_t il = 0; il < w.layers.size(); ++il) {
    if (!w.layers[il].has_experts()) continue;
    const auto& l = arena.layout(il);
    for (uint32_t e = 0; e < w.layers[il].routing.n_expert; ++e) {
      const strata_expert_weights src = w.layers[il].experts.expert(e);
      const strata_expert_weights got = l.at(arena.expert(il, e));
      ASSERT_EQ(std::memcmp(got.gate, src.gate, l.up - l.gate), 0) << il << "/" << e;
      ASSERT_EQ(std::memcmp(got.up, src.up, l.down - l.up), 0) << il << "/" << e;
      ASSERT_EQ(std::memcmp(got.down, src.down, l.bytes - l.down), 0) << il << "/" << e;
      EXPECT_EQ(got.gate_type, src.gate_type);
      EXPECT_EQ(got.down_type, src.down_type);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(ExpertArena, PrivateCopyHoldsEveryExpertInSlotLayout) {
  const ExpertArena arena(tiny().weights(), 3);
  EXPECT_TRUE(arena.filled());
  EXPECT_TRUE(arena.file().empty());
  expect_holds_the_model(arena);
}

TEST(ExpertArena, TmpfsFileIsFilledOnceThenMappedAsItIs) {
  const std::filesystem::path shm = "/dev/shm";
  if (!on_tmpfs(shm)) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string file = (shm / ("strata_arena_test_" + std::to_string(::getpid()))).string();
  std::filesystem::remove(file);
  {
    const ExpertArena first(tiny().weights(), 2, file, "model-a");
    EXPECT_TRUE(first.filled());
    expect_holds_the_model(first);
  }
  {
    const ExpertArena again(tiny().weights(), 2, file, "model-a");
    EXPECT_FALSE(again.filled()) << "the same model's complete arena is mapped, not refilled";
    expect_holds_the_model(again);
  }
  {
    const ExpertArena other(tiny().weights(), 2, file, "model-b");
    EXPECT_TRUE(other.filled()) << "another fingerprint refills";
  }
  // An interrupted fill: the completion mark (after magic and version in the header) cleared.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    const uint32_t zero = 0;
    f.write(reinterpret_cast<const char*>(&zero), sizeof zero);
  }
  {
    const ExpertArena after(tiny().weights(), 2, file, "model-b");
    EXPECT_TRUE(after.filled()) << "an incomplete arena is refilled";
    expect_holds_the_model(after);
  }
  std::filesystem::remove(file);
}

TEST(ExpertArena, FileOffTmpfsIsRefusedWithTheFix) {
  const std::filesystem::path folder = std::filesystem::path(STRATA_SOURCE_DIR);
  if (on_tmpfs(folder)) GTEST_SKIP() << "the source folder is on tmpfs here";
  try {
    const ExpertArena arena(tiny().weights(), 1, (folder / "arena.bin").string(), "m");
    ADD_FAILURE() << "a disk file was accepted";
  } catch (const strata::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("is not on tmpfs"), std::string::npos) << what;
    EXPECT_NE(what.find("/dev/shm"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(folder / "arena.bin"));
}

// experts.host_copy: auto asks whether the mapped file's experts fit in memory: a small model's do, whether or not
// its resident pages count (tmpfs); an arena is never registered this way. on_tmpfs agrees with statfs.
TEST(ExpertArena, SmallMappedModelFitsInMemory) {
  const ExpertArena mapped(tiny().weights(), ExpertArena::InFile{});
  EXPECT_TRUE(mapped.fits_in_memory(false));
  EXPECT_TRUE(mapped.fits_in_memory(true));
  const ExpertArena copy(tiny().weights(), 1);
  EXPECT_FALSE(copy.fits_in_memory(false));
  EXPECT_EQ(ExpertArena::on_tmpfs(STRATA_SOURCE_DIR), on_tmpfs(STRATA_SOURCE_DIR));
  EXPECT_FALSE(ExpertArena::on_tmpfs("/no/such/folder"));
}

}  // namespace
