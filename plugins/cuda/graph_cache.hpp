// Decode steps repeat the same op list token after token (positions and lengths are read from device memory), so
// the list is captured once into a GPU graph and replayed. A list is captured the second time it is seen (the first
// run sizes the scratch memory); graphs are keyed by the bytes of the op list (and of each MOE_ROUTED table and
// its expert form), so any change of shapes or addresses makes a new one. Ops whose meaning lives in host memory that changes between
// calls (MOE's pair lists) are never captured. A list with a WAIT (a program that waits for its host) is never run
// directly: enqueueing a thousand kernels one by one can block in the driver, and growing scratch memory
// synchronizes, while the device waits for a host thread whose own calls would then wait too. It is captured at
// once instead, sized by a first capture that is thrown away when a scratch buffer must grow.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "context.hpp"

namespace strata::gpu {

class GraphCache {
 public:
  explicit GraphCache(size_t capacity = 8) : capacity_(capacity) {}
  ~GraphCache();
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;

  // Runs `ops` on the context's stream: by replaying a graph, by capturing one, or directly (run_op for each).
  void run(Context& ctx, const strata_op* ops, size_t n_ops);
  void clear();
  uint64_t replays() const { return replays_; }
  uint64_t captures() const { return captures_; }

 private:
  struct Entry {
    std::vector<unsigned char> key;
    cudaGraphExec_t exec = nullptr;
    uint64_t generation = 0;
  };
  static bool capturable(const strata_op* ops, size_t n_ops);
  static bool waits(const strata_op* ops, size_t n_ops);
  // Captures ops into an executable graph (sizing: scratch requests are noted, not served).
  static cudaGraphExec_t capture(Context& ctx, const strata_op* ops, size_t n_ops, bool sizing);
  void keep_and_launch(Context& ctx, std::vector<unsigned char> key, cudaGraphExec_t exec);
  static std::vector<unsigned char> key_of(const strata_op* ops, size_t n_ops);

  size_t capacity_;
  std::list<Entry> entries_;               // most recently used first
  std::vector<unsigned char> seen_once_;   // the last uncaptured key
  uint64_t replays_ = 0, captures_ = 0;
};

}  // namespace strata::gpu
