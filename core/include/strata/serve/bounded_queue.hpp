// The requests waiting for the engine: first in, first out, with a fixed capacity so that a burst beyond it is
// answered 503 at once instead of piling up. The capacity counts items waiting beyond those in service (serve.queue:
// "requests waiting beyond the running ones"): each consumer serves one item at a time, from pop() until it calls
// finished(), so a capacity of 0 still takes an item whenever a consumer is free. close() wakes the consumers for
// shutdown.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

namespace strata::serve {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity, size_t consumers = 1) : capacity_(capacity), consumers_(consumers) {}

  // False (and `item` untouched) when the queue is full or closed.
  bool try_push(T& item) {
    {
      std::lock_guard lock(mutex_);
      if (closed_ || items_.size() + in_service_ >= capacity_ + consumers_) return false;
      items_.push_back(std::move(item));
    }
    ready_.notify_one();
    return true;
  }

  // The oldest item, waiting for one; nullopt once closed and empty. The item is in service until finished().
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    ++in_service_;
    return item;
  }

  // The oldest item if one waits, without waiting (nullopt otherwise); in service until finished() like pop()'s.
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    ++in_service_;
    return item;
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

  // The consumer is done with the item pop() gave it.
  void finished() {
    std::lock_guard lock(mutex_);
    if (in_service_ > 0) --in_service_;
  }

  // Refuses new items; pop() still hands out those already queued, then nullopt.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

  // Items waiting (not yet taken by pop()).
  size_t size() const {
    std::lock_guard lock(mutex_);
    return items_.size();
  }
  // Items taken by pop() and not finished.
  size_t in_service() const {
    std::lock_guard lock(mutex_);
    return in_service_;
  }
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_, consumers_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
  size_t in_service_ = 0;
  bool closed_ = false;
};

}  // namespace strata::serve
