// Copies of experts from their host copy (experts::ExpertArena) into device slots: the hybrid path's PCIe misses,
// the cache's first fill and its swaps, the peer card's fill.
//
// - An arena (experts.host_copy: arena, or experts.arena): each expert is one run, page-locked as a whole by its
//   owner, so a copy is one copy_async.
// - The mapped GGUF (experts.host_copy: file, or auto for a model larger than the memory): an expert is three
//   slices of the file. A copy from pageable memory runs at a fraction of the link's rate and, on CUDA, is staged
//   by the driver anyway, so the slices are staged through a small ring of pinned (mapped) buffers: the calling
//   thread copies them in, and the buffer crosses the link on the stream while the next one is filled. A buffer is
//   reused once its copy's event is done; every copy is enqueued before the call returns, so events recorded on
//   the stream afterwards cover it. A `wide` copy (prompt windows, the cache's first fill: the CPU pool idle)
//   fills the buffer on `fill_threads` threads (parallel_copy.hpp); decode's copies fill on the calling thread
//   alone.
// - experts.host_copy: file_registered (and auto, the default, when the experts fit in memory): the file's expert
//   ranges are also registered (page-locked, read-only) one bounded piece at a time, each piece's pages read in
//   first so that the driver never waits on the disk, and stopping once the registration has taken too long; a
//   matrix inside a registered piece is copied from the mapping directly, any other through the ring.
// A call's direct copies (the arena's experts, the registered slices) go to the device in one batch
// (DeviceQueues::copy_batch_async): one enqueue costs the calling thread microseconds, and the file's experts are
// three slices each.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"
#include "parallel_copy.hpp"
#include "strata/experts/expert_arena.hpp"

namespace strata {

class ExpertUpload {
 public:
  struct Options {
    bool register_file = false;      // experts.host_copy: file_registered
    uint32_t ring_buffers = 4;       // the pinned ring (the file as the host copy)
    uint64_t ring_bytes = 8ull << 20;  // each buffer
    uint32_t fill_threads = 1;         // threads that fill a buffer for a wide copy, the caller included
    uint64_t register_piece = 256ull << 20;
    double register_budget_s = 30;   // registration stops once it has taken this long; the rest is staged
  };
  ExpertUpload(const experts::ExpertArena& arena, DeviceMemory& mem, DeviceQueues& queues, Options options);
  ExpertUpload(const experts::ExpertArena& arena, DeviceMemory& mem, DeviceQueues& queues)
      : ExpertUpload(arena, mem, queues, Options{}) {}
  ~ExpertUpload();
  ExpertUpload(const ExpertUpload&) = delete;
  ExpertUpload& operator=(const ExpertUpload&) = delete;

  // Enqueues the copy of expert (il, e) into `dst` (device memory laid out as arena.layout(il)) on stream `s`.
  // Thread-safe; may wait for an earlier staged copy to land before its buffer is filled again. `wide`: the ring
  // is filled on fill_threads threads (for callers whose CPU pool is idle meanwhile).
  void copy(void* dst, uint32_t il, uint32_t e, strata_stream s, bool wide = false);
  // copy() of several experts of layer il at once (their destinations apart): the direct copies in one batch.
  struct Target {
    void* dst;
    uint32_t expert;
  };
  void copy_experts(std::span<const Target> targets, uint32_t il, strata_stream s, bool wide = false);
  // Waits for every staged copy (before the ring or the mapping goes away).
  void drain();
  // "one copy each from the arena" / "staged through 4 x 8.0 MiB pinned ..." / "... registered ...".
  std::string describe() const;
  uint64_t staged_bytes() const { return staged_bytes_; }
  uint64_t direct_bytes() const { return direct_bytes_; }

 private:
  struct Registered {
    const unsigned char* p;
    uint64_t bytes;
  };
  bool registered(const unsigned char* p, uint64_t bytes) const;
  void register_ranges(const Options& o);
  void flush(strata_stream s);
  void take(uint32_t b);

  const experts::ExpertArena& arena_;
  DeviceQueues& queues_;
  std::mutex mutex_;
  // The ring.
  std::vector<Buffer<unsigned char>> ring_;
  std::vector<std::unique_ptr<DeviceEvent>> landed_;
  std::vector<bool> in_flight_;
  uint64_t ring_bytes_ = 0;
  std::unique_ptr<ParallelCopy> filler_;  // wide copies' fills (null: one thread)
  std::vector<ParallelCopy::Piece> gathered_;  // a wide copy's pieces of the current buffer, copied at its flush
  uint32_t cur_ = 0;
  uint64_t fill_ = 0;
  unsigned char* run_dst_ = nullptr;
  // Registered pieces of the mapping, by address.
  std::vector<Registered> pieces_;
  uint64_t registered_bytes_ = 0, wanted_bytes_ = 0;
  double register_s_ = 0;
  std::string register_why_;
  bool register_tried_ = false;
  uint64_t staged_bytes_ = 0, direct_bytes_ = 0;
  // A call's direct copies, enqueued as one batch.
  std::vector<void*> batch_dst_;
  std::vector<const void*> batch_src_;
  std::vector<uint64_t> batch_bytes_;
};

}  // namespace strata
