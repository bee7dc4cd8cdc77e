// How an op cuts its items (output rows, tokens, columns) into the thread pool's pieces: runs of `per` items, the
// last taking the rest. A piece is small enough that a thread preempted in the middle of one holds the run up for
// little, and that the participants who run get similar shares however many show up; big enough that claiming it
// (one atomic exchange) is cheap next to computing it. Piece boundaries never change a result: every output is
// computed by exactly one piece, with the code it would run under any other cut.
#pragma once

#include <algorithm>
#include <cstdint>

namespace strata::cpu {

// Work below this many weight bytes runs on the calling thread (ThreadPool::run(pieces, fn, here)): waking the
// workers would cost more than it saves.
constexpr uint64_t kSmallWorkBytes = 64u << 10;
// About this much work a piece, in bytes of weights read (times tokens, for the matrix ops).
constexpr uint64_t kPieceCost = 32u << 10;
// A run small enough to be cut below kPieceCost still gets at least this many pieces a participant.
constexpr unsigned kPiecesPerPart = 4;
// The products cut their output rows on multiples of this (cut()'s align): 16 floats are one 64-byte cache line,
// so two workers never write one line of a token's output.
constexpr int64_t kRowAlign = 16;

struct Range {
  int64_t begin, end;
};

struct Pieces {
  int64_t n = 0;    // items
  int64_t per = 1;  // items a piece
  uint32_t count() const { return static_cast<uint32_t>((n + per - 1) / per); }
  Range range(uint32_t piece) const {
    const int64_t b = static_cast<int64_t>(piece) * per;
    return {b, std::min(n, b + per)};
  }
};

// Pieces of n items that cost item_cost each: about kPieceCost a piece, less for a run too small to give every one
// of `parts` participants kPiecesPerPart pieces; `per` is a multiple of align (pieces start on aligned items, so
// that two of them never write one cache line) and at least align.
inline Pieces cut(int64_t n, uint64_t item_cost, unsigned parts, int64_t align = 1) {
  const uint64_t total = item_cost * static_cast<uint64_t>(n);
  const uint64_t target = std::min<uint64_t>(kPieceCost, total / (static_cast<uint64_t>(parts) * kPiecesPerPart));
  const int64_t items = static_cast<int64_t>(target / std::max<uint64_t>(item_cost, 1));
  const int64_t aligned_n = (n + align - 1) / align * align;
  return {n, std::clamp<int64_t>(items / align * align, align, std::max<int64_t>(aligned_n, align))};
}

}  // namespace strata::cpu
