// cpu_avx2's thread pool and topology reader, compiled into the tests (the plugin hides its symbols): every piece
// runs exactly once, on a slot below the participant limit; a worker that holds a piece does not hold the rest of
// the run (the caller takes them); POOL_HOLD's limit bounds the threads; errors come back after the run; and the
// physical core count read from a sysfs tree of the test's own.
#ifdef STRATA_TEST_CPU_POOL

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../../plugins/cpu_avx2/cpu_topology.hpp"
#include "../../plugins/cpu_avx2/pieces.hpp"
#include "../../plugins/cpu_avx2/thread_pool.hpp"
#include "test_temp_dir.hpp"

namespace strata::cpu {
namespace {

// Runs `pieces` pieces and returns how many times each ran; fails the test on a slot out of range.
std::vector<int> run_counts(ThreadPool& pool, uint32_t pieces) {
  std::unique_ptr<std::atomic<int>[]> counts(new std::atomic<int>[pieces]());
  std::atomic<unsigned> worst_slot{0};
  pool.run(pieces, [&](uint32_t piece, unsigned slot) {
    counts[piece].fetch_add(1);
    unsigned w = worst_slot.load();
    while (slot > w && !worst_slot.compare_exchange_weak(w, slot)) {
    }
  });
  EXPECT_LT(worst_slot.load(), pool.parts());
  std::vector<int> out(pieces);
  for (uint32_t i = 0; i < pieces; ++i) out[i] = counts[i].load();
  return out;
}

TEST(CpuPool, EveryPieceRunsExactlyOnce) {
  for (const bool host : {true, false}) {
    ThreadPool pool(3, host, 50);
    // Many runs back to back, of different sizes: a worker still draining one run must not take the next's pieces
    // under the old run's function.
    for (int rep = 0; rep < 200; ++rep) {
      for (const uint32_t pieces : {1u, 2u, 3u, 7u, 64u, 1000u}) {
        const std::vector<int> counts = run_counts(pool, pieces);
        for (uint32_t i = 0; i < pieces; ++i) ASSERT_EQ(counts[i], 1) << "piece " << i << " of " << pieces << ", host " << host;
      }
    }
  }
}

// The one worker takes a piece and holds it until every other piece has finished; the run still completes,
// because the caller claims the rest. (A pool that gives each thread a fixed share would leave the worker's share
// undone, and the held piece would wait out its bound.)
TEST(CpuPool, CallerTakesTheRestWhileAWorkerHoldsAPiece) {
  ThreadPool pool(1, true, 0);
  constexpr uint32_t kPieces = 100;
  constexpr auto kBound = std::chrono::seconds(20);  // a safeguard against a hang, never reached when the pool works
  std::mutex m;
  std::condition_variable cv;
  bool worker_holding = false;
  uint32_t others_done = 0, on_caller = 0;
  bool released = false, caller_waited = false, caller_first = true;
  pool.run(kPieces, [&](uint32_t, unsigned slot) {
    std::unique_lock<std::mutex> lock(m);
    if (slot == 0 && caller_first) {
      // The caller's first piece waits for the worker to take one, so that the worker surely holds a piece.
      caller_first = false;
      caller_waited = cv.wait_for(lock, kBound, [&] { return worker_holding; });
    } else if (slot != 0 && !worker_holding) {
      worker_holding = true;
      cv.notify_all();
      released = cv.wait_for(lock, kBound, [&] { return others_done == kPieces - 1; });
      return;
    }
    ++others_done;
    if (slot == 0) ++on_caller;
    cv.notify_all();
  });
  EXPECT_TRUE(caller_waited) << "the worker never took a piece";
  EXPECT_TRUE(released) << "the other pieces did not finish while the worker held one";
  EXPECT_EQ(on_caller, kPieces - 1);
}

// POOL_HOLD: with a limit of n, only slots below n run pieces, on at most n threads; the workers left out take
// part again when the limit is lifted.
TEST(CpuPool, ActivePartsLimitTheParticipants) {
  ThreadPool pool(5, true, 50);
  EXPECT_EQ(pool.max_parts(), 6u);
  for (const unsigned n : {2u, 1u, 6u, 3u, 99u}) {
    pool.set_active_parts(n);
    EXPECT_EQ(pool.parts(), std::min(n, 6u));
    for (int rep = 0; rep < 50; ++rep) {
      std::mutex m;
      std::set<std::thread::id> threads;
      std::set<unsigned> slots;
      pool.run(200, [&](uint32_t, unsigned slot) {
        std::lock_guard<std::mutex> lock(m);
        threads.insert(std::this_thread::get_id());
        slots.insert(slot);
      });
      EXPECT_LE(threads.size(), pool.parts()) << "limit " << n;
      EXPECT_LT(*slots.rbegin(), pool.parts()) << "limit " << n;
      if (pool.parts() == 1) {
        EXPECT_EQ(*threads.begin(), std::this_thread::get_id());
      }
    }
  }
}

TEST(CpuPool, WorkersAloneWhenTheCallerDoesNotWork) {
  ThreadPool pool(2, false, 50);
  EXPECT_EQ(pool.max_parts(), 2u);
  std::mutex m;
  std::set<std::thread::id> threads;
  pool.run(300, [&](uint32_t, unsigned slot) {
    std::lock_guard<std::mutex> lock(m);
    EXPECT_LT(slot, 2u);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(CpuPool, RethrowsAfterEveryPieceFinished) {
  ThreadPool pool(3, true, 50);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(500, [&](uint32_t piece, unsigned) {
    ran.fetch_add(1);
    if (piece == 17) throw std::runtime_error("piece 17");
  }), std::runtime_error);
  EXPECT_EQ(ran.load(), 500);
  // The pool runs on after an error.
  const std::vector<int> counts = run_counts(pool, 50);
  EXPECT_EQ(std::count(counts.begin(), counts.end(), 1), 50);
  EXPECT_THROW(pool.run(ThreadPool::kMaxPieces + 1, [](uint32_t, unsigned) {}), std::length_error);
}

TEST(CpuPool, PiecesCoverTheItemsOnAlignedStarts) {
  for (const int64_t n : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{1000}, int64_t{100000}}) {
    for (const unsigned parts : {1u, 2u, 16u}) {
      const Pieces p = cut(n, 4096, parts, 16);
      EXPECT_EQ(p.per % 16, 0);
      int64_t next = 0;
      for (uint32_t i = 0; i < p.count(); ++i) {
        const Range r = p.range(i);
        EXPECT_EQ(r.begin, next);
        EXPECT_EQ(r.begin % 16, 0);
        EXPECT_GT(r.end, r.begin);
        next = r.end;
      }
      EXPECT_EQ(next, n) << n << " items, " << parts << " parts";
    }
  }
  // A large run: pieces of about kPieceCost; a small one: several a participant.
  EXPECT_EQ(cut(100000, 1024, 2, 16).per, static_cast<int64_t>(kPieceCost / 1024));
  EXPECT_GE(cut(256, 1024, 4, 16).count(), 4u * kPiecesPerPart);
}

// A sysfs tree of eight CPUs on four cores (siblings n and n + 4), one CPU with only the older file, one without
// topology.
class FakeSysfs {
 public:
  FakeSysfs() : root_(testing_support::test_temp_path("cpu_pool", "sys")) {
    for (int c = 0; c < 8; ++c) {
      const std::string list = std::to_string(c % 4) + "," + std::to_string(c % 4 + 4);
      write(c, c == 5 ? "thread_siblings_list" : "core_cpus_list", list);
    }
    std::filesystem::create_directories(root_ + "/devices/system/cpu/cpu9");
  }
  const std::string& root() const { return root_; }

 private:
  void write(int cpu, const std::string& file, const std::string& text) {
    const std::string dir = root_ + "/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/" + file) << text << "\n";
  }
  std::string root_;
};

TEST(CpuTopology, CountsPhysicalCoresOfTheAllowedCpus) {
  const FakeSysfs sys;
  const CpuTopology all = read_topology({0, 1, 2, 3, 4, 5, 6, 7}, sys.root());
  EXPECT_EQ(all.cpus, 8u);
  EXPECT_EQ(all.cores, 4u);
  EXPECT_EQ(read_topology({0, 4}, sys.root()).cores, 1u);   // two siblings
  EXPECT_EQ(read_topology({1, 5}, sys.root()).cores, 1u);   // cpu5 has only thread_siblings_list
  EXPECT_EQ(read_topology({0, 1, 2}, sys.root()).cores, 3u);
  EXPECT_EQ(read_topology({0, 4, 9}, sys.root()).cores, 2u);  // cpu9: no topology, a core of its own
  const CpuTopology none = read_topology({}, sys.root());
  EXPECT_EQ(none.cpus, 1u);
  EXPECT_EQ(none.cores, 1u);
  // This machine: at least one core, no more cores than CPUs.
  const CpuTopology here = read_topology(affinity_cpus());
  EXPECT_GE(here.cores, 1u);
  EXPECT_LE(here.cores, here.cpus);
}

}  // namespace
}  // namespace strata::cpu

#endif  // STRATA_TEST_CPU_POOL
