#include "strata/experts/link_probe.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "strata/error.hpp"
#include "strata/steady_seconds.hpp"

namespace strata::experts {

namespace {

using Clock = std::chrono::steady_clock;

// Anonymous host memory, every page written (so registration and copies meet resident pages).
class AnonymousBuffer {
 public:
  explicit AnonymousBuffer(uint64_t bytes) : bytes_(bytes) {
    // MAP_POPULATE: the kernel backs the pages in one pass (a 1 GiB buffer faulted in page by page took a few
    // hundred milliseconds of the engine's start).
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      throw Error("link probe: cannot map " + std::to_string(bytes) + " bytes of host memory: " + std::strerror(errno));
    }
    p_ = static_cast<unsigned char*>(p);
    for (uint64_t i = 0; i < bytes; i += 4096) p_[i] = static_cast<unsigned char>(i / 4096);
  }
  ~AnonymousBuffer() { munmap(p_, bytes_); }
  AnonymousBuffer(const AnonymousBuffer&) = delete;
  AnonymousBuffer& operator=(const AnonymousBuffer&) = delete;
  unsigned char* data() const { return p_; }

 private:
  unsigned char* p_ = nullptr;
  uint64_t bytes_;
};

class DeviceBlock {
 public:
  DeviceBlock(DeviceMemory& m, uint64_t bytes) : m_(&m), p_(m.allocate(bytes)) {}
  ~DeviceBlock() { m_->release(p_); }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  void* get() const { return p_; }

 private:
  DeviceMemory* m_;
  void* p_;
};

}  // namespace

LinkMeasure probe_link(DeviceMemory& memory, DeviceQueues& queues, uint64_t bytes, int reps) {
  if (bytes < kSmallCopyBytes) {
    throw Error("link probe: copies of " + std::to_string(bytes) + " bytes are too small to time; use at least " +
                std::to_string(kSmallCopyBytes));
  }
  if (reps < 1) throw Error("link probe: reps must be at least 1");
  AnonymousBuffer host(bytes);
  DeviceBlock device(memory, bytes);
  HostRegistration lock(queues, host.data(), bytes, true);
  DeviceStream stream(queues);
  DeviceEvent done(queues);

  const auto timed = [&](auto enqueue) {
    const auto t0 = Clock::now();
    enqueue();
    queues.record(done.get(), stream.get());
    queues.synchronize(done.get());
    return seconds_since(t0);
  };
  const auto big = [&] { queues.copy_async(device.get(), host.data(), bytes, STRATA_COPY_HOST_TO_DEVICE, stream.get()); };
  (void)timed(big);  // warm-up: first-touch costs of the driver's paths
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) times.push_back(timed(big));
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];

  // The small copies, wrapping around the buffers' places: queued one by one, then as batches.
  const uint64_t places = bytes / kSmallCopyBytes;  // >= 1
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  const std::vector<uint64_t> sizes(kSmallCopies, kSmallCopyBytes);
  for (int i = 0; i < kSmallCopies; ++i) {
    const uint64_t at = static_cast<uint64_t>(i) % places * kSmallCopyBytes;
    dsts.push_back(static_cast<unsigned char*>(device.get()) + at);
    srcs.push_back(host.data() + at);
  }
  const double small = timed([&] {
    for (int i = 0; i < kSmallCopies; ++i) {
      queues.copy_async(dsts[i], srcs[i], kSmallCopyBytes, STRATA_COPY_HOST_TO_DEVICE, stream.get());
    }
  });
  // Copies of one batch may run in any order, so their destinations must be apart: with fewer places than copies,
  // the batch is split where a place repeats.
  const size_t per_batch = std::min<size_t>(kSmallCopies, places);
  const double batched = timed([&] {
    for (size_t i = 0; i < dsts.size(); i += per_batch) {
      const size_t n = std::min(per_batch, dsts.size() - i);
      queues.copy_batch_async(std::span<void* const>(dsts.data() + i, n), std::span<const void* const>(srcs.data() + i, n),
                              std::span<const uint64_t>(sizes.data() + i, n), STRATA_COPY_HOST_TO_DEVICE, stream.get());
    }
  });

  LinkMeasure m;
  m.bytes = bytes;
  m.batch_overhead_s = batched / kSmallCopies;
  m.pinned = lock.locked();
  m.why_not_pinned = lock.why();
  m.h2d_bytes_per_s = median > 0 ? static_cast<double>(bytes) / median : 0.0;
  m.copy_overhead_s = small / kSmallCopies;
  return m;
}

double measure_device_copy(DeviceMemory& memory, DeviceQueues& queues, uint64_t bytes, int reps) {
  if (bytes == 0 || reps < 1) throw Error("device copy measure: bytes and reps must be positive");
  DeviceBlock from(memory, bytes), to(memory, bytes);
  DeviceStream stream(queues);
  DeviceEvent done(queues);
  double best = 0;
  for (int r = 0; r <= reps; ++r) {  // the first is a warm-up
    const auto t0 = Clock::now();
    queues.copy_async(to.get(), from.get(), bytes, STRATA_COPY_DEVICE_TO_DEVICE, stream.get());
    queues.record(done.get(), stream.get());
    queues.synchronize(done.get());
    const double t = seconds_since(t0);
    if (r > 0 && t > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / t);
  }
  return best;
}

double measure_host_read(unsigned threads, uint64_t bytes, int reps) {
  if (threads < 1) throw Error("host read probe: threads must be at least 1");
  if (reps < 1) throw Error("host read probe: reps must be at least 1");
  if (bytes < (uint64_t{1} << 20)) throw Error("host read probe: use a buffer of at least 1 MiB (beyond the caches)");
  const uint64_t words = bytes / sizeof(uint64_t);
  AnonymousBuffer buffer(words * sizeof(uint64_t));
  const auto* w = reinterpret_cast<const uint64_t*>(buffer.data());
  std::atomic<uint64_t> sink{0};
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<std::thread> pool;
    const auto t0 = Clock::now();
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t begin = words * t / threads, end = words * (t + 1) / threads;
        uint64_t a = 0, b = 0, c = 0, d = 0;  // four chains: the loads, not the adds, bound the loop
        uint64_t i = begin;
        for (; i + 4 <= end; i += 4) {
          a += w[i];
          b += w[i + 1];
          c += w[i + 2];
          d += w[i + 3];
        }
        for (; i < end; ++i) a += w[i];
        sink.fetch_add(a + b + c + d, std::memory_order_relaxed);
      });
    }
    for (std::thread& t : pool) t.join();
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / seconds_since(t0));
  }
  return best;
}

std::string describe(const LinkMeasure& m) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%s host-to-device %.2f GB/s (%.0f MiB copies), %.1f us a queued small copy (%.1f us in a batch)",
                m.pinned ? "pinned" : "pageable", m.h2d_bytes_per_s / 1e9, static_cast<double>(m.bytes) / (1 << 20),
                m.copy_overhead_s * 1e6, m.batch_overhead_s * 1e6);
  std::string s = line;
  if (!m.pinned && !m.why_not_pinned.empty()) s += " (not page-locked: " + m.why_not_pinned + ")";
  return s;
}

}  // namespace strata::experts
