// 2 MiB pages for the file as the experts' host copy (experts.huge_pages).
//
// The CPU pool streams experts from the host copy on every core at once, and over 4 KiB pages that costs page walks:
// on the H100 host 16 threads read the same bytes at 134 GB/s in anonymous 2 MiB pages and 118 GB/s in anonymous
// 4 KiB ones (docs/PERFORMANCE.md, session of 2026-12-07, late morning). The kernel offers a file two ways: a disk
// file's large page-cache folios are mapped with one entry per 2 MiB when the mapping is 2 MiB-aligned (gguf::Mapping
// is) and MADV_HUGEPAGE makes fault-time read-ahead allocate 2 MiB folios; a tmpfs file's small pages are collapsed
// into huge ones with MADV_COLLAPSE, whatever the system's shmem THP setting (an ext4 file's are refused). Both are
// hints: where the kernel refuses, the pages stay as they are and only the report says so
// (docs/ARCHITECTURE.md, "Huge pages").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/experts/expert_arena.hpp"

namespace strata::experts {

struct HugePagesReport {
  uint64_t advised = 0;    // bytes marked MADV_HUGEPAGE (whole 2 MiB pages inside the ranges)
  uint64_t collapsed = 0;  // bytes MADV_COLLAPSE put in huge pages (collapse asked only)
  uint64_t refused = 0;    // bytes MADV_COLLAPSE refused (busy, no free huge page, or a kernel without it)
  int refusal = 0;         // the first refusal's errno
  double seconds = 0;
  std::string describe() const;
};

// Marks the ranges' whole 2 MiB pages MADV_HUGEPAGE and, with `collapse`, collapses them (MADV_COLLAPSE) on up to
// `threads` threads. Call before the pages are page-locked: the kernel cannot collapse pinned pages.
HugePagesReport advise_huge_pages(const std::vector<ExpertArena::Range>& ranges, unsigned threads, bool collapse);

// experts.huge_pages false: marks the ranges MADV_NOHUGEPAGE, so that the kernel maps them with 4 KiB entries even
// where its page cache holds 2 MiB folios (the A/B against the default). Returns the bytes marked.
uint64_t advise_small_pages(const std::vector<ExpertArena::Range>& ranges);

// Bytes of the ranges' mappings that the page tables map with 2 MiB entries now (FilePmdMapped and ShmemPmdMapped
// of /proc/self/smaps, over the mappings the ranges lie in); 0 when smaps cannot be read.
uint64_t huge_mapped_bytes(const std::vector<ExpertArena::Range>& ranges);

}  // namespace strata::experts
