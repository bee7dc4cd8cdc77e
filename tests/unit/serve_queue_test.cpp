// The request queue: it holds `capacity` items beyond those its consumers are serving, in order, refuses more,
// and after close() hands out what it holds, then nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "strata/serve/bounded_queue.hpp"

namespace {

using strata::serve::BoundedQueue;

TEST(ServeQueue, HoldsCapacityItemsInOrder) {
  BoundedQueue<int> q(2);  // two waiting beyond the one the consumer takes
  int a = 1, b = 2, c = 3, d = 4;
  EXPECT_TRUE(q.try_push(a));
  EXPECT_TRUE(q.try_push(b));
  EXPECT_TRUE(q.try_push(c));
  EXPECT_FALSE(q.try_push(d));
  EXPECT_EQ(d, 4);  // a refused item is left as it was
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.pop(), 1);
  EXPECT_FALSE(q.try_push(d));  // 1 in service, 2 waiting
  q.finished();
  EXPECT_TRUE(q.try_push(d));
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), 3);
  EXPECT_EQ(q.pop(), 4);
  EXPECT_EQ(q.size(), 0u);
}

TEST(ServeQueue, CapacityCountsWaitingBeyondThoseInService) {
  BoundedQueue<int> q(0);  // one consumer, nothing may wait
  int a = 1, b = 2;
  EXPECT_TRUE(q.try_push(a));  // the free consumer's
  EXPECT_FALSE(q.try_push(b));
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.in_service(), 1u);
  EXPECT_FALSE(q.try_push(b));  // still serving a
  q.finished();
  EXPECT_EQ(q.in_service(), 0u);
  EXPECT_TRUE(q.try_push(b));

  BoundedQueue<int> two(1, 2);  // two consumers and one waiting
  int x = 0;
  EXPECT_TRUE(two.try_push(x));
  EXPECT_TRUE(two.try_push(x));
  EXPECT_TRUE(two.try_push(x));
  EXPECT_FALSE(two.try_push(x));
  two.pop();
  EXPECT_FALSE(two.try_push(x));  // one in service, two waiting: still three
}

TEST(ServeQueue, CloseDrainsThenEnds) {
  BoundedQueue<int> q(4);
  int a = 1;
  ASSERT_TRUE(q.try_push(a));
  q.close();
  int b = 2;
  EXPECT_FALSE(q.try_push(b));
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), std::nullopt);
  // A consumer blocked in pop() is woken by close().
  BoundedQueue<int> empty(1);
  auto waiter = std::async(std::launch::async, [&] { return empty.pop(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  empty.close();
  EXPECT_EQ(waiter.get(), std::nullopt);
}

}  // namespace
