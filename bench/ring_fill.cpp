// The pinned ring's fill rate (core/src/engine/parallel_copy.hpp): memcpy of a file's mapped bytes into an 8 MiB
// buffer, an expert's three slices at a time as one job, on 1 thread and on N, interleaved. The file as the
// experts' host copy stages every PCIe copy this way, so this rate bounds prompt windows' misses at a budget.
//
//   strata_bench_ring_fill FILE [--threads N] [--rounds R]   (FILE: any large file in the page cache, a GGUF)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../core/src/engine/parallel_copy.hpp"

namespace {

int usage() {
  std::fprintf(stderr, "usage: strata_bench_ring_fill FILE [--threads N] [--rounds R]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  unsigned threads = 8, rounds = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (v < 1 || v > 256) return usage();
    if (a == "--threads") {
      threads = static_cast<unsigned>(v);
    } else if (a == "--rounds") {
      rounds = static_cast<unsigned>(v);
    } else {
      return usage();
    }
  }
  const int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    std::fprintf(stderr, "strata_bench_ring_fill: cannot open %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  const off_t size = lseek(fd, 0, SEEK_END);
  void* map = size > 0 ? mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (map == MAP_FAILED) {
    std::fprintf(stderr, "strata_bench_ring_fill: cannot map %s\n", argv[1]);
    return 1;
  }
  const auto* p = static_cast<const unsigned char*>(map);
  // qwen3-30b-a3b q4_k_m's expert: gate and up 768 rows of 2048 q4_K values, down 2048 rows of 768 q6_K values.
  const size_t slice[3] = {884736, 884736, 1290240}, expert = slice[0] + slice[1] + slice[2];
  if (static_cast<size_t>(size) < expert) {
    std::fprintf(stderr, "strata_bench_ring_fill: %s is smaller than one expert (%zu bytes)\n", argv[1], expert);
    return 1;
  }
  std::vector<unsigned char> ring(size_t{8} << 20);
  std::printf("| threads | round | GB/s |\n| ---: | ---: | ---: |\n");
  for (unsigned round = 1; round <= rounds; ++round) {
    for (const unsigned t : {1u, threads}) {
      strata::ParallelCopy pc(t);
      size_t total = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t off = 0; off + expert <= static_cast<size_t>(size); off += expert) {
        const strata::ParallelCopy::Piece pieces[3] = {
            {ring.data(), p + off, slice[0]},
            {ring.data() + slice[0], p + off + slice[0], slice[1]},
            {ring.data() + slice[0] + slice[1], p + off + slice[0] + slice[1], slice[2]}};
        pc.copy(pieces);
        total += expert;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("| %u | %u | %.2f |\n", t, round, static_cast<double>(total) / s / 1e9);
    }
  }
  munmap(map, static_cast<size_t>(size));
  close(fd);
  return 0;
}
