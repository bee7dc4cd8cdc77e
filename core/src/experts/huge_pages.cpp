#include "strata/experts/huge_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "human_bytes.hpp"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

namespace strata::experts {
namespace {

constexpr uintptr_t kHuge = uintptr_t{2} << 20;
// A collapse call's span: small enough that the threads share the work evenly, large enough to be few calls.
constexpr uintptr_t kCollapseSpan = uintptr_t{64} << 20;

struct Span {
  uintptr_t begin = 0, end = 0;
};

// The whole 2 MiB pages inside each range (a range's partial pages at its ends stay small).
std::vector<Span> whole_huge_pages(const std::vector<ExpertArena::Range>& ranges) {
  std::vector<Span> spans;
  for (const ExpertArena::Range& r : ranges) {
    const auto p = reinterpret_cast<uintptr_t>(r.p);
    const uintptr_t begin = (p + kHuge - 1) / kHuge * kHuge, end = (p + r.bytes) / kHuge * kHuge;
    if (end > begin) spans.push_back({begin, end});
  }
  return spans;
}

}  // namespace

std::string HugePagesReport::describe() const {
  std::string s = "huge pages: " + human_bytes(advised) + " advised";
  if (collapsed + refused > 0) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", seconds);
    s += ", " + human_bytes(collapsed) + " collapsed in " + secs + " s";
    if (refused > 0) s += ", " + human_bytes(refused) + " refused (" + std::strerror(refusal) + ")";
  }
  return s;
}

HugePagesReport advise_huge_pages(const std::vector<ExpertArena::Range>& ranges, unsigned threads, bool collapse) {
  const auto t0 = std::chrono::steady_clock::now();
  HugePagesReport report;
  std::vector<Span> spans = whole_huge_pages(ranges);
  for (const Span& s : spans) {
    if (madvise(reinterpret_cast<void*>(s.begin), s.end - s.begin, MADV_HUGEPAGE) == 0) report.advised += s.end - s.begin;
  }
  if (collapse && !spans.empty()) {
    std::vector<Span> work;
    for (const Span& s : spans) {
      for (uintptr_t a = s.begin; a < s.end; a += kCollapseSpan) work.push_back({a, std::min(s.end, a + kCollapseSpan)});
    }
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> collapsed{0}, refused{0};
    std::atomic<int> refusal{0};
    const auto run = [&] {
      for (size_t i = next++; i < work.size(); i = next++) {
        const Span& s = work[i];
        if (madvise(reinterpret_cast<void*>(s.begin), s.end - s.begin, MADV_COLLAPSE) == 0) {
          collapsed += s.end - s.begin;
        } else {
          int none = 0;
          refusal.compare_exchange_strong(none, errno);
          refused += s.end - s.begin;
          // A kernel without MADV_COLLAPSE for this mapping refuses every span alike: stop asking.
          if (errno == EINVAL) next = work.size();
        }
      }
    };
    std::vector<std::thread> pool;
    const size_t n = std::min<size_t>(std::max(1u, threads), work.size());
    for (size_t t = 1; t < n; ++t) pool.emplace_back(run);
    run();
    for (std::thread& t : pool) t.join();
    report.collapsed = collapsed;
    report.refused = refused;
    report.refusal = refusal;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

uint64_t advise_small_pages(const std::vector<ExpertArena::Range>& ranges) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uint64_t marked = 0;
  for (const ExpertArena::Range& r : ranges) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(r.p) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(r.p) + r.bytes;
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_NOHUGEPAGE) == 0) marked += r.bytes;
  }
  return marked;
}

uint64_t huge_mapped_bytes(const std::vector<ExpertArena::Range>& ranges) {
  if (ranges.empty()) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const ExpertArena::Range& r : ranges) {
    lo = std::min(lo, reinterpret_cast<uintptr_t>(r.p));
    hi = std::max(hi, reinterpret_cast<uintptr_t>(r.p) + r.bytes);
  }
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  uint64_t bytes = 0;
  while (std::getline(smaps, line)) {
    unsigned long begin = 0, end = 0;
    char dash = 0;
    // A mapping's first line: "begin-end perms offset dev inode path"; its fields' lines start with a name.
    if (std::sscanf(line.c_str(), "%lx%c%lx", &begin, &dash, &end) == 3 && dash == '-' &&
        line.find(' ') > line.find('-')) {
      inside = end > lo && begin < hi;
      continue;
    }
    unsigned long kib = 0;
    if (inside && (std::sscanf(line.c_str(), "FilePmdMapped: %lu kB", &kib) == 1 ||
                   std::sscanf(line.c_str(), "ShmemPmdMapped: %lu kB", &kib) == 1)) {
      bytes += uint64_t{kib} << 10;
    }
  }
  return bytes;
}

}  // namespace strata::experts
