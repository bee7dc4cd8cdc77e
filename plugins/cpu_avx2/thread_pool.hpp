// The plugin's worker threads plus (optionally) the calling thread. An op is cut into pieces (pieces.hpp); every
// participant, the caller first, claims piece indices from one atomic cursor until none are left, and a run ends
// when every piece has finished, not when every worker has reported: a worker the OS has not scheduled finds
// nothing left when it wakes, and the caller computes what it would have. Each piece is computed by the same code
// wherever it runs and writes outputs no other piece writes, so results do not depend on timing or on the number
// of threads. The one wait left is for a piece already claimed by a thread that is then preempted; pieces are kept
// small for that. Between runs workers spin briefly, then sleep on a futex, so an idle engine does not burn CPU. A
// limit (set_active_parts, the expert pool's POOL_HOLD) lets at most n participants claim pieces: the workers left
// out go straight back to sleep after each wake-up, so their cores are free for another process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace strata::cpu {

class ThreadPool {
 public:
  // workers: threads started here; host_worker: the caller of run() claims pieces too; spin_us: how long an idle
  // worker (or the caller waiting for the last pieces) spins before it sleeps; pin: one worker per allowed CPU,
  // the first CPU left to the caller (unpinned workers may move to whichever CPU is idle).
  ThreadPool(unsigned workers, bool host_worker, unsigned spin_us = 300, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Participants of the next runs (every one, or the limit set): the slots a run's pieces see are below it.
  unsigned parts() const { return active_parts_; }
  unsigned max_parts() const { return parts_; }
  // Between runs (the caller serialises): at most n participants claim pieces (n from 1 to max_parts(); with a
  // host worker, the calling thread and the first n - 1 workers).
  void set_active_parts(unsigned n);
  unsigned workers() const { return static_cast<unsigned>(threads_.size()); }
  // The CPUs the workers are pinned to (-1: not pinned).
  const std::vector<int>& pinned_cpus() const { return pinned_; }

  // The most pieces one run takes.
  static constexpr uint32_t kMaxPieces = (1u << 24) - 1;

  // Calls fn(piece, slot) once for every piece in [0, pieces) and returns when all have returned. `slot`, below
  // parts(), names the participant that runs the piece (0 is the calling thread when it works): for scratch memory
  // of its own. One run at a time (callers serialise); an exception thrown by a piece is rethrown here after every
  // piece finished. Throws std::length_error for more than kMaxPieces pieces.
  template <class Fn>
  void run(uint32_t pieces, Fn&& fn) {
    if (host_worker_ && (pieces == 1 || active_parts_ == 1)) {
      for (uint32_t i = 0; i < pieces; ++i) fn(i, 0u);  // nobody to share with: skip the wake-up
      return;
    }
    using F = std::remove_reference_t<Fn>;
    dispatch(&invoke<F>, const_cast<void*>(static_cast<const void*>(&fn)), pieces);
  }
  // As run(), or when `here` is set every piece on the calling thread (slot 0): for work too small to pay for
  // waking the workers (a few microseconds).
  template <class Fn>
  void run(uint32_t pieces, Fn&& fn, bool here) {
    if (here) {
      for (uint32_t i = 0; i < pieces; ++i) fn(i, 0u);
    } else {
      run(pieces, fn);
    }
  }

 private:
  using PieceFn = void (*)(void* ctx, uint32_t piece, unsigned slot);
  template <class Fn>
  static void invoke(void* ctx, uint32_t piece, unsigned slot) {
    (*static_cast<Fn*>(ctx))(piece, slot);  // Fn may be const-qualified: the cast restores it
  }

  void dispatch(PieceFn fn, void* ctx, uint32_t pieces);
  void worker_main(unsigned index);
  // Claims and runs pieces of the current run as participant `slot` until none are left (or the run's limit leaves
  // the slot out); returns how many it ran. A worker (`count_each`) counts each finished piece at once; the caller
  // adds its own when it is done claiming.
  uint32_t drain(unsigned slot, bool count_each);
  void run_piece(uint32_t piece, unsigned slot);

  unsigned parts_ = 1;
  unsigned active_parts_ = 1;
  bool host_worker_ = true;
  std::chrono::microseconds spin_{300};
  std::vector<std::thread> threads_;
  std::vector<int> pinned_;

  // fn_ and ctx_ are written before the cursor is published and read only by a participant that has claimed a piece
  // (the run cannot end, and so cannot be replaced, before that piece finishes).
  PieceFn fn_ = nullptr;
  void* ctx_ = nullptr;
  // The run's claim state in one word: next piece (bits 0-23), pieces (24-47), participant limit (48-63). A claim is
  // a compare-exchange of the whole word, so a worker that read a finished run's word can never take an index of
  // the next run by mistake: its exchange fails, or the word it matched is the next run's own.
  std::atomic<uint64_t> cursor_{0};
  std::atomic<uint32_t> done_{0};        // finished pieces of this run
  std::atomic<uint32_t> generation_{0};  // bumped once per run; idle workers wait for it to change
  std::atomic<uint32_t> sleepers_{0};    // workers asleep on generation_
  std::atomic<uint32_t> host_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace strata::cpu
