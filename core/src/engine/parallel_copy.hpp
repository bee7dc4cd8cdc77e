// A memcpy split over a few threads. The file as the experts' host copy stages every PCIe copy through a pinned
// ring that one thread fills with memcpy from the mapping: on the H100 host that ran at 7.5 GB/s against a 52 GB/s
// link, with 61 GB/s of host reads on 16 threads. Where the CPU pool is idle (prompt windows, whose misses all
// cross the link, and the cache's first fill) a fill is split into page-aligned parts, one per thread, the calling
// thread taking the first; decode's copies stay on one thread (the pool computes beside them). A ring buffer's
// pieces (an expert's three slices, about 3 MiB for qwen3-30b-a3b) go as one job: split per slice of 1 MiB, waking
// the helpers cost more than the split saved on a 2-vCPU VM (8.5 GB/s alone against 7.5 on two threads), while
// 4 MiB jobs ran at 13.1 GB/s on two against 8.4.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace strata {

class ParallelCopy {
 public:
  // `threads` in all, the caller included (1: a plain memcpy, no thread is made).
  explicit ParallelCopy(unsigned threads);
  ~ParallelCopy();
  ParallelCopy(const ParallelCopy&) = delete;
  ParallelCopy& operator=(const ParallelCopy&) = delete;

  struct Piece {
    unsigned char* dst;
    const unsigned char* src;
    size_t n;
  };
  // Every piece's dst[0, n) = src[0, n), the pieces' bytes split evenly over the threads. One caller at a time (the
  // owner serializes its calls); returns once every part is done.
  void copy(std::span<const Piece> pieces);
  void copy(void* dst, const void* src, size_t n) {
    const Piece one{static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src), n};
    copy(std::span<const Piece>(&one, 1));
  }
  unsigned threads() const { return n_threads_; }

  // Below this many bytes a copy runs on the caller alone (waking the helpers costs more than it saves).
  static constexpr size_t kMinSplit = size_t{512} << 10;

 private:
  void part(unsigned index) const;
  void helper(unsigned index);

  unsigned n_threads_;
  std::vector<std::thread> helpers_;
  std::mutex m_;
  std::condition_variable work_, done_;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
  std::span<const Piece> pieces_;
  size_t n_ = 0;  // the pieces' bytes
};

}  // namespace strata
