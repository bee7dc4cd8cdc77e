#include "parallel_copy.hpp"

#include <algorithm>
#include <cstring>

namespace strata {

ParallelCopy::ParallelCopy(unsigned threads) : n_threads_(std::max(1u, threads)) {
  for (unsigned i = 1; i < n_threads_; ++i) helpers_.emplace_back([this, i] { helper(i); });
}

ParallelCopy::~ParallelCopy() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  work_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

// Part `index` of the current copy: bytes [begin, end) of the pieces laid end to end, equal page-aligned spans, the
// last one shorter (or empty).
void ParallelCopy::part(unsigned index) const {
  constexpr size_t kPage = 4096;
  const size_t per = (n_ / n_threads_ + kPage) / kPage * kPage;
  const size_t begin = std::min(n_, per * index), end = std::min(n_, begin + per);
  size_t at = 0;  // where the piece starts in the concatenation
  for (const Piece& p : pieces_) {
    const size_t lo = std::max(begin, at), hi = std::min(end, at + p.n);
    if (lo < hi) std::memcpy(p.dst + (lo - at), p.src + (lo - at), hi - lo);
    at += p.n;
    if (at >= end) break;
  }
}

void ParallelCopy::copy(std::span<const Piece> pieces) {
  size_t n = 0;
  for (const Piece& p : pieces) n += p.n;
  if (n_threads_ == 1 || n < kMinSplit) {
    for (const Piece& p : pieces) std::memcpy(p.dst, p.src, p.n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    pieces_ = pieces;
    n_ = n;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  work_.notify_all();
  part(0);
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void ParallelCopy::helper(unsigned index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lock.unlock();
    part(index);  // the job's fields do not change until every part is done
    lock.lock();
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace strata
