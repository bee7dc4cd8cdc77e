// The link probe's plumbing over a stand-in device whose memory is host memory and whose copies are memcpy: which
// copies it makes, from which memory, what it reports when the memory cannot be page-locked, and its bad arguments.
// The rates themselves are measured on the GPU machine (tests/gpu).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "error_text.hpp"
#include "strata/experts/link_probe.hpp"

namespace ex = strata::experts;
using strata::test::error_of;

namespace {

class HostDevice final : public strata::DeviceMemory, public strata::DeviceQueues {
 public:
  bool allow_lock = true;
  struct Copy {
    const void* src;
    uint64_t bytes;
    bool from_locked;
  };
  std::vector<Copy> copies;
  int live_streams = 0, live_events = 0, registered = 0, recorded = 0, synced = 0;

  void* allocate(uint64_t bytes) override { return std::malloc(bytes); }
  void* allocate_mapped(uint64_t bytes) override { return std::malloc(bytes); }
  void release(void* p) noexcept override { std::free(p); }
  uint64_t free_bytes() const override { return uint64_t{1} << 30; }
  void upload(void* d, const void* s, uint64_t n) override { std::memcpy(d, s, n); }
  void download(void* d, const void* s, uint64_t n) override { std::memcpy(d, s, n); }
  const std::string& device_name() const override { return name_; }

  strata_stream make_stream() override {
    ++live_streams;
    return reinterpret_cast<strata_stream>(&name_);
  }
  void drop_stream(strata_stream) noexcept override { --live_streams; }
  strata_event make_event() override {
    ++live_events;
    return reinterpret_cast<strata_event>(&name_);
  }
  void drop_event(strata_event) noexcept override { --live_events; }
  void record(strata_event, strata_stream s) override {
    EXPECT_NE(s, nullptr) << "the probe copies on a stream of its own, not the compute stream";
    ++recorded;
  }
  void wait(strata_stream, strata_event) override {}
  bool done(strata_event) override { return true; }
  void synchronize(strata_event) override { ++synced; }
  void copy_async(void* dst, const void* src, uint64_t bytes, strata_copy_kind kind, strata_stream s) override {
    EXPECT_EQ(kind, STRATA_COPY_HOST_TO_DEVICE);
    EXPECT_NE(s, nullptr);
    const auto* c = static_cast<const unsigned char*>(src);
    const bool inside = locked_ != nullptr && c >= locked_ && c + bytes <= locked_ + locked_bytes_;
    copies.push_back({src, bytes, inside});
    std::memcpy(dst, src, bytes);
  }
  // Batches: their sizes noted, their destinations apart (a batch's copies may run in any order), then copied.
  std::vector<size_t> batches;
  void copy_batch_async(std::span<void* const> dsts, std::span<const void* const> srcs, std::span<const uint64_t> bytes,
                        strata_copy_kind kind, strata_stream s) override {
    batches.push_back(dsts.size());
    for (size_t i = 0; i < dsts.size(); ++i) {
      for (size_t j = 0; j < i; ++j) EXPECT_NE(dsts[i], dsts[j]) << "a batch writes one place twice";
    }
    DeviceQueues::copy_batch_async(dsts, srcs, bytes, kind, s);
  }
  void compute_async(std::span<const strata_op>) override { ADD_FAILURE() << "the probe computes nothing"; }
  bool register_host(void* p, uint64_t bytes, bool read_only, std::string& why) override {
    EXPECT_TRUE(read_only) << "the arena's kind of registration";
    if (!allow_lock) {
      why = "the stand-in refuses";
      return false;
    }
    ++registered;
    locked_ = static_cast<const unsigned char*>(p);
    locked_bytes_ = bytes;
    return true;
  }
  void unregister_host(void*) noexcept override {
    --registered;
    locked_ = nullptr;
  }

 private:
  std::string name_ = "stand-in";
  const unsigned char* locked_ = nullptr;
  uint64_t locked_bytes_ = 0;
};

}  // namespace

TEST(ExpertsLinkProbe, TimesLargeCopiesFromLockedMemoryThenAQueueOfSmallOnes) {
  HostDevice d;
  const uint64_t bytes = 1 << 20;
  const ex::LinkMeasure m = ex::probe_link(d, d, bytes, 3);
  EXPECT_TRUE(m.pinned);
  EXPECT_EQ(m.bytes, bytes);
  EXPECT_GT(m.h2d_bytes_per_s, 0.0);
  EXPECT_GT(m.copy_overhead_s, 0.0);
  EXPECT_GT(m.batch_overhead_s, 0.0);
  // A warm-up and three timed large copies, then the queue of small ones one by one and again as one batch: every
  // copy from the locked memory.
  ASSERT_EQ(d.copies.size(), 4u + 2 * ex::kSmallCopies);
  for (size_t i = 0; i < d.copies.size(); ++i) {
    EXPECT_EQ(d.copies[i].bytes, i < 4 ? bytes : ex::kSmallCopyBytes) << i;
    EXPECT_TRUE(d.copies[i].from_locked) << i;
  }
  EXPECT_EQ(d.batches, std::vector<size_t>{static_cast<size_t>(ex::kSmallCopies)});
  EXPECT_EQ(d.recorded, 6);  // one event wait per timed step
  EXPECT_EQ(d.synced, 6);
  // Everything made is released.
  EXPECT_EQ(d.live_streams, 0);
  EXPECT_EQ(d.live_events, 0);
  EXPECT_EQ(d.registered, 0);
  EXPECT_NE(ex::describe(m).find("pinned host-to-device"), std::string::npos) << ex::describe(m);
}

TEST(ExpertsLinkProbe, MemoryThatCannotBeLockedIsTimedPageableAndSaysWhy) {
  HostDevice d;
  d.allow_lock = false;
  const ex::LinkMeasure m = ex::probe_link(d, d, 64 << 10, 1);
  EXPECT_FALSE(m.pinned);
  EXPECT_EQ(m.why_not_pinned, "the stand-in refuses");
  EXPECT_GT(m.h2d_bytes_per_s, 0.0);
  // 64 KiB holds 16 places for the 64 small copies: they wrap around inside the buffers, and the batched queue is
  // four batches of 16, none writing a place twice.
  EXPECT_EQ(d.copies.size(), 2u + 2 * ex::kSmallCopies);
  EXPECT_EQ(d.batches, std::vector<size_t>(4, 16));
  const std::string text = ex::describe(m);
  EXPECT_NE(text.find("pageable"), std::string::npos) << text;
  EXPECT_NE(text.find("the stand-in refuses"), std::string::npos) << text;
}

TEST(ExpertsLinkProbe, BadArguments) {
  HostDevice d;
  EXPECT_NE(error_of([&] { ex::probe_link(d, d, 100, 2); }).find("too small to time"), std::string::npos);
  EXPECT_NE(error_of([&] { ex::probe_link(d, d, 1 << 20, 0); }).find("reps must be at least 1"), std::string::npos);
  EXPECT_NE(error_of([] { ex::measure_host_read(0, 1 << 20); }).find("threads must be at least 1"), std::string::npos);
  EXPECT_NE(error_of([] { ex::measure_host_read(1, 1000); }).find("at least 1 MiB"), std::string::npos);
  EXPECT_NE(error_of([] { ex::measure_host_read(1, 1 << 20, 0); }).find("reps must be at least 1"), std::string::npos);
}

TEST(ExpertsLinkProbe, HostReadIsARate) {
  const double one = ex::measure_host_read(1, 64 << 20, 2);
  EXPECT_GT(one, 1e8) << "a host reads more than 100 MB/s";
  EXPECT_LT(one, 1e13);
}
