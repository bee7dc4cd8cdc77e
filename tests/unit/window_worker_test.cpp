// WindowWorker (strata/window_worker.hpp), the thread behind fast mode's placer and copy watcher: one job
// per start(), in order; finished()/wait_for() report the job started last; what a job throws is its error() (and
// the next start() clears it); the thread sleeps between windows and is joined on destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "strata/window_worker.hpp"

namespace {

TEST(WindowWorker, RunsOneJobPerStartAndReportsIt) {
  std::atomic<int> runs{0};
  std::atomic<bool> hold{true};
  strata::WindowWorker w([&] {
    while (hold.load()) std::this_thread::yield();
    ++runs;
  });
  EXPECT_TRUE(w.finished()) << "nothing started yet";
  w.start();
  EXPECT_FALSE(w.wait_for(std::chrono::milliseconds(20))) << "the job is held";
  EXPECT_FALSE(w.finished());
  hold.store(false);
  w.wait();
  EXPECT_TRUE(w.finished());
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(w.error(), nullptr);
  for (int i = 0; i < 5; ++i) {
    w.start();
    EXPECT_TRUE(w.wait_for(std::chrono::seconds(10)));
  }
  EXPECT_EQ(runs.load(), 6);
}

TEST(WindowWorker, AJobsExceptionIsItsErrorUntilTheNextStart) {
  std::atomic<bool> fail{true};
  strata::WindowWorker w([&] {
    if (fail.load()) throw std::runtime_error("the placer failed");
  });
  w.start();
  w.wait();
  ASSERT_NE(w.error(), nullptr);
  try {
    std::rethrow_exception(w.error());
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "the placer failed");
  }
  fail.store(false);
  w.start();
  w.wait();
  EXPECT_EQ(w.error(), nullptr);
}

TEST(WindowWorker, DestructionJoinsAnIdleThread) {
  std::atomic<int> runs{0};
  {
    strata::WindowWorker w([&] { ++runs; });
    w.start();
    w.wait();
  }
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
