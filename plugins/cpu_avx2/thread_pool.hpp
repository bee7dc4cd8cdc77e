// The plugin's worker threads: one pinned thread per core, plus (optionally) the calling thread. An op is split
// into one part per participant; part p always runs on the same thread, and the parts' outputs never overlap,
// so results do not depend on timing. Between ops workers spin briefly, then sleep on a futex, so an idle
// engine does not burn CPU. A limit (set_active_parts, the expert pool's POOL_HOLD) runs the work on fewer parts:
// the workers left out go straight back to sleep after each wake-up instead of spinning, so their cores are free
// for another process.
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
  // workers: threads started here; host_worker: the caller of run() also computes a part; spin_us: how long an idle
  // worker (or the caller waiting for the parts) spins before it sleeps.
  ThreadPool(unsigned workers, bool host_worker, unsigned spin_us = 300);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // How many parts run() splits work into: every participant, or the limit set.
  unsigned parts() const { return active_parts_; }
  unsigned max_parts() const { return parts_; }
  // Between runs (the caller serialises): the next runs use parts 0..n-1 (n from 1 to max_parts(); with a host
  // worker, the calling thread and the first n - 1 workers).
  void set_active_parts(unsigned n);
  unsigned workers() const { return static_cast<unsigned>(threads_.size()); }
  // The CPUs the workers are pinned to (empty entries: not pinned).
  const std::vector<int>& pinned_cpus() const { return pinned_; }

  // Calls fn(part, parts()) once for every part and returns when all have returned. One run at a time
  // (callers serialise); an exception thrown by a part is rethrown here after all parts finish.
  // As run(), or when `here` is set fn(0, 1) on the calling thread alone: for work too small to pay for waking
  // the workers (a few microseconds).
  template <class Fn>
  void run(Fn&& fn, bool here) {
    if (here) {
      fn(0u, 1u);
    } else {
      run(fn);
    }
  }

  template <class Fn>
  void run(Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    dispatch(&invoke<F>, const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using PartFn = void (*)(void* ctx, unsigned part, unsigned parts);
  template <class Fn>
  static void invoke(void* ctx, unsigned part, unsigned parts) {
    (*static_cast<Fn*>(ctx))(part, parts);  // Fn may be const-qualified: the cast restores it
  }

  void dispatch(PartFn fn, void* ctx);
  void worker_main(unsigned index);
  void run_part(unsigned part);

  unsigned parts_ = 1;
  unsigned active_parts_ = 1;
  unsigned run_parts_ = 1;                   // this run's parts (published with generation_)
  bool host_worker_ = true;
  std::chrono::microseconds spin_{300};
  std::vector<std::thread> threads_;
  std::vector<int> pinned_;

  PartFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint32_t> generation_{0};  // bumped once per run; workers wait for it to change
  std::atomic<uint32_t> pending_{0};     // parts not yet finished
  std::atomic<uint32_t> sleepers_{0};    // workers asleep on generation_
  std::atomic<uint32_t> host_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Work below this many weight bytes runs on the calling thread (see ThreadPool::run(fn, here)).
constexpr uint64_t kSmallWorkBytes = 64u << 10;

// The range [begin, end) of part `part` when n items are split into `parts` contiguous ranges whose starts are
// multiples of `align` (the last range takes the rest).
struct Range {
  int64_t begin, end;
};
Range split_range(int64_t n, unsigned part, unsigned parts, int64_t align = 1);

}  // namespace strata::cpu
