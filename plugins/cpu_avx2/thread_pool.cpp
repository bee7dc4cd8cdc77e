#include "thread_pool.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

#include "simd.hpp"

namespace strata::cpu {
namespace {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// Spins (with pause) until `done()` holds or `spin` is over; returns whether it holds. The spin time (the option
// spin_us) should cover the gaps between the ops of one decode step, and stay short enough that an idle engine
// sleeps. The spinner yields now and then: when the thread it waits for shares its CPU (the caller's thread is not
// pinned, and the machine may be busy), a pure spin would hold that thread off for a whole time slice.
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

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

}  // namespace

Range split_range(int64_t n, unsigned part, unsigned parts, int64_t align) {
  const int64_t units = (n + align - 1) / align;
  const int64_t b = units * part / parts * align;
  const int64_t e = part + 1 == parts ? n : units * (part + 1) / parts * align;
  return {b < n ? b : n, e < n ? e : n};
}

ThreadPool::ThreadPool(unsigned workers, bool host_worker, unsigned spin_us)
    : host_worker_(host_worker), spin_(spin_us) {
  parts_ = workers + (host_worker ? 1u : 0u);
  active_parts_ = parts_;
  // The first allowed CPU is left to the calling thread; workers take the next ones, one each.
  const std::vector<int> cpus = allowed_cpus();
  pinned_.assign(workers, -1);
  threads_.reserve(workers);
  for (unsigned i = 0; i < workers; ++i) {
    threads_.emplace_back([this, i] { worker_main(i); });
    if (cpus.size() > 1) {
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

void ThreadPool::run_part(unsigned part) {
  try {
    fn_(ctx_, part, run_parts_);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  // seq_cst pairs with the host's store to host_sleeping_ and load of pending_: one of them sees the other.
  if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && host_sleeping_.load(std::memory_order_seq_cst)) {
    futex_wake_all(&pending_);
  }
}

void ThreadPool::dispatch(PartFn fn, void* ctx) {
  fn_ = fn;
  ctx_ = ctx;
  error_ = nullptr;
  run_parts_ = active_parts_;
  pending_.store(run_parts_, std::memory_order_relaxed);
  // Publishes fn_, ctx_ and pending_; seq_cst pairs with a worker's sleepers_ increment and generation_ check.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) futex_wake_all(&generation_);
  // The host's part is the last of this run's (the workers take 0, 1, ...).
  if (host_worker_) run_part(run_parts_ - 1);
  const auto finished = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  while (!spin_until(finished, spin_)) {
    host_sleeping_.store(1, std::memory_order_seq_cst);
    const uint32_t left = pending_.load(std::memory_order_seq_cst);
    if (left != 0) futex_wait(&pending_, left);
    host_sleeping_.store(0, std::memory_order_relaxed);
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_main(unsigned index) {
  // Generation 0 is the one before the first run; a worker that starts late must still take run 1.
  uint32_t seen = 0;
  bool left_out = false;  // the last run did not take this worker (a limit): sleep at once, do not spin
  for (;;) {
    const auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    while (!spin_until(started, left_out ? std::chrono::microseconds(0) : spin_)) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(&generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    // This run's workers are the first run_parts_ (less the host's part).
    left_out = index >= run_parts_ - (host_worker_ ? 1u : 0u);
    // A worker left out of run `seen` may read the next run's count as that run is dispatched: it then takes the
    // next run from the top (a run it belongs to cannot end, so `seen` stays current for one it is part of).
    if (generation_.load(std::memory_order_seq_cst) != seen) {
      left_out = false;
      continue;
    }
    if (!left_out) run_part(index);
  }
}

}  // namespace strata::cpu
