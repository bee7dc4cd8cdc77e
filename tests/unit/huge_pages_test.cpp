// The file as the experts' host copy in 2 MiB pages (experts.huge_pages): the model's mapping starts on a 2 MiB
// boundary (an address and its file offset agree modulo 2 MiB, without which no page can be mapped huge), the advice
// covers a range's whole 2 MiB pages only, and a tmpfs file's pages collapse into huge ones with their bytes kept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../core/src/gguf/mapping.hpp"
#include "strata/experts/huge_pages.hpp"

namespace {

using strata::experts::ExpertArena;
constexpr uint64_t kHuge = uint64_t{2} << 20;

// A file of `bytes` whose every 8-byte word holds its own offset.
std::filesystem::path write_counting_file(const std::filesystem::path& folder, uint64_t bytes) {
  const std::filesystem::path path = folder / ("strata-huge-pages-" + std::to_string(getpid()) + ".bin");
  std::vector<uint64_t> words(bytes / 8);
  for (uint64_t i = 0; i < words.size(); ++i) words[i] = i * 8;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(words.data()), std::streamsize(bytes));
  return path;
}

bool counts(const uint8_t* p, uint64_t bytes) {
  for (uint64_t i = 0; i < bytes; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, 8);
    if (w != i) return false;
  }
  return true;
}

TEST(HugePages, ModelMappingStartsOnA2MiBBoundary) {
  // Mappings the kernel does not align by itself (Linux 6.18 aligns a disk file's of 2 MiB or more, not a smaller
  // one's, nor a tmpfs file's while shmem THP is off): a small file in the temporary folder and, where /dev/shm is
  // tmpfs, a 3 MiB one there.
  std::vector<std::filesystem::path> files{write_counting_file(std::filesystem::temp_directory_path(), 69632)};
  if (ExpertArena::on_tmpfs("/dev/shm")) {
    files.push_back(write_counting_file("/dev/shm", (uint64_t{3} << 20) + 4096));
  }
  for (const auto& path : files) {
    for (int i = 0; i < 4; ++i) {  // several mappings side by side: each aligned, whatever the address space holds
      const strata::gguf::detail::Mapping m(path.string());
      EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % kHuge, 0u) << path;
      EXPECT_TRUE(counts(m.data(), m.size())) << path;
    }
    std::filesystem::remove(path);
  }
}

TEST(HugePages, AdviceCoversARangesWhole2MiBPagesOnly) {
  const auto path = write_counting_file(std::filesystem::temp_directory_path(), uint64_t{8} << 20);
  const strata::gguf::detail::Mapping m(path.string());
  // From 4 KiB past the mapping's start, 6 MiB: the whole pages are [2 MiB, 6 MiB); the partial ends stay small.
  const std::vector<ExpertArena::Range> ranges{{m.data() + 4096, uint64_t{6} << 20}};
  const auto report = strata::experts::advise_huge_pages(ranges, 2, false);
  EXPECT_EQ(report.advised, uint64_t{4} << 20);
  EXPECT_EQ(report.collapsed + report.refused, 0u);
  EXPECT_EQ(strata::experts::advise_small_pages(ranges), uint64_t{6} << 20);  // huge_pages false: every byte
  // Less than one whole page: nothing to advise.
  EXPECT_EQ(strata::experts::advise_huge_pages({{m.data() + 4096, kHuge}}, 1, false).advised, 0u);
  EXPECT_TRUE(counts(m.data(), m.size()));
  std::filesystem::remove(path);
}

TEST(HugePages, TmpfsPagesCollapseKeepingTheirBytes) {
  if (!ExpertArena::on_tmpfs("/dev/shm")) {
    GTEST_SKIP() << "/dev/shm is not tmpfs here";
  }
  const auto path = write_counting_file("/dev/shm", uint64_t{8} << 20);
  {
    const strata::gguf::detail::Mapping m(path.string());
    const std::vector<ExpertArena::Range> ranges{{m.data(), m.size()}};
    EXPECT_EQ(strata::experts::huge_mapped_bytes(ranges), 0u);  // tmpfs writes small pages (shmem THP off or advise)
    const auto report = strata::experts::advise_huge_pages(ranges, 3, true);
    EXPECT_EQ(report.advised, m.size());
    EXPECT_EQ(report.collapsed + report.refused, m.size());
    if (report.collapsed == 0) {
      std::filesystem::remove(path);
      GTEST_SKIP() << "this kernel does not collapse tmpfs pages: " << std::strerror(report.refusal);
    }
    EXPECT_EQ(strata::experts::huge_mapped_bytes(ranges), report.collapsed) << report.describe();
    EXPECT_TRUE(counts(m.data(), m.size()));
  }
  std::filesystem::remove(path);
}

}  // namespace
