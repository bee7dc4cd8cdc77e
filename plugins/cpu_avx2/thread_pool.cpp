#include "thread_pool.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "cpu_topology.hpp"
#include "simd.hpp"

namespace strata::cpu {
namespace {

constexpr uint64_t kField = (uint64_t{1} << 24) - 1;

uint64_t pack(uint64_t next, uint64_t pieces, uint64_t limit) { return next | (pieces << 24) | (limit << 48); }

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// Spins (with pause) until `done()` holds or `spin` is over; returns whether it holds. The spin time (the option
// spin_us) should cover the gaps between the ops of one decode step, and stay short enough that an idle engine
// sleeps. The spinner yields now and then: when the thread it waits for shares its CPU (the machine may be busy),
// a pure spin would hold that thread off for a whole time slice.
template <class Pred>
bool spin_until(Pred done, std::chrono::microseconds spin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    _mm_pause();
    if ((i & 63u) == 0) {
      sched_yield();
      if (std::chrono::steady_clock::now() > until) return done();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(unsigned workers, bool host_worker, unsigned spin_us, bool pin)
    : host_worker_(host_worker), spin_(spin_us) {
  parts_ = workers + (host_worker ? 1u : 0u);
  active_parts_ = parts_;
  const std::vector<int> cpus = pin ? affinity_cpus() : std::vector<int>{};
  pinned_.assign(workers, -1);
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) {
    threads_.emplace_back([this, i] { worker_main(i); });
    if (cpus.size() > 1) {
      // The first allowed CPU is left to the calling thread; workers take the next ones, one each.
      const int cpu = cpus[(i + 1) % cpus.size()];
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      if (pthread_setaffinity_np(threads_.back().native_handle(), sizeof set, &set) == 0) pinned_[i] = cpu;
    }
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&generation_);
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::set_active_parts(unsigned n) { active_parts_ = n < 1 ? 1 : (n > parts_ ? parts_ : n); }

void ThreadPool::run_piece(uint32_t piece, unsigned slot) {
  try {
    fn_(ctx_, piece, slot);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
}

uint32_t ThreadPool::drain(unsigned slot, bool count_each) {
  uint32_t ran = 0;
  uint64_t word = cursor_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t next = word & kField, pieces = (word >> 24) & kField, limit = word >> 48;
    if (next >= pieces || slot >= limit) return ran;
    // acquire: a successful claim reads the word its run's dispatch released (or an exchange continuing from it),
    // so fn_ and ctx_ are that run's.
    if (!cursor_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    run_piece(static_cast<uint32_t>(next), slot);
    ++ran;
    if (count_each) {
      // seq_cst pairs with the host's store to host_sleeping_ and load of done_: one of them sees the other.
      if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == pieces && host_sleeping_.load(std::memory_order_seq_cst)) {
        futex_wake_all(&done_);
      }
    }
    word = cursor_.load(std::memory_order_acquire);
  }
}

void ThreadPool::dispatch(PieceFn fn, void* ctx, uint32_t pieces) {
  if (pieces == 0) return;
  if (pieces > kMaxPieces) {
    throw std::length_error("thread pool: " + std::to_string(pieces) + " pieces in one run (at most " +
                            std::to_string(kMaxPieces) + ")");
  }
  fn_ = fn;
  ctx_ = ctx;
  error_ = nullptr;
  done_.store(0, std::memory_order_relaxed);
  // Releases fn_, ctx_ and done_ to whoever claims a piece.
  cursor_.store(pack(0, pieces, active_parts_), std::memory_order_release);
  // seq_cst pairs with a worker's sleepers_ increment and generation_ check.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) futex_wake_all(&generation_);
  if (host_worker_) {
    const uint32_t own = drain(0, false);
    if (own != 0) done_.fetch_add(own, std::memory_order_acq_rel);
  }
  // What is left: pieces other participants claimed and have not finished.
  const auto finished = [&] { return done_.load(std::memory_order_acquire) == pieces; };
  while (!spin_until(finished, spin_)) {
    host_sleeping_.store(1, std::memory_order_seq_cst);
    const uint32_t seen = done_.load(std::memory_order_seq_cst);
    if (seen != pieces) futex_wait(&done_, seen);
    host_sleeping_.store(0, std::memory_order_relaxed);
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_main(unsigned index) {
  const unsigned slot = index + (host_worker_ ? 1u : 0u);
  // Generation 0 is the one before the first run; a worker that starts late must still look at run 1.
  uint32_t seen = 0;
  bool left_out = false;  // the last run's limit left this worker out: sleep at once, do not spin
  for (;;) {
    const auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    while (!spin_until(started, left_out ? std::chrono::microseconds(0) : spin_)) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(&generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    // A run that started before this worker woke may be over (its pieces all taken): drain finds nothing.
    left_out = slot >= (cursor_.load(std::memory_order_relaxed) >> 48);
    if (!left_out) drain(slot, true);
  }
}

}  // namespace strata::cpu
