// ParallelCopy (the ring's fills for wide copies): every byte lands where a memcpy puts it, for sizes below and
// above the split, odd sizes, unaligned ends, one thread and several, lists of pieces whose parts cross piece
// boundaries, many copies in a row (each waits for its parts), and the helpers stop cleanly.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "../../core/src/engine/parallel_copy.hpp"

namespace {

TEST(ParallelCopy, EveryByteWhereMemcpyPutsIt) {
  std::mt19937 rng(7);
  std::vector<unsigned char> src(size_t{5} << 20);
  for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
  const size_t split = strata::ParallelCopy::kMinSplit;
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    strata::ParallelCopy pc(threads);
    EXPECT_EQ(pc.threads(), threads);
    for (const size_t n : {size_t{0}, size_t{1}, size_t{4095}, split - 1, split, split + 1, size_t{3} << 20,
                           (size_t{4} << 20) + 12345}) {
      for (const size_t offset : {size_t{0}, size_t{3}}) {  // unaligned source and destination too
        std::vector<unsigned char> dst(n + 2 * offset + 16, 0xA5);
        pc.copy(dst.data() + offset, src.data() + offset, n);
        ASSERT_EQ(std::memcmp(dst.data() + offset, src.data() + offset, n), 0) << threads << " threads, " << n << " bytes";
        for (size_t i = 0; i < offset; ++i) ASSERT_EQ(dst[i], 0xA5) << "a byte before the copy was written";
        for (size_t i = offset + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "a byte past the copy was written";
      }
    }
  }
}

TEST(ParallelCopy, ManyCopiesInARow) {
  strata::ParallelCopy pc(4);
  std::vector<unsigned char> src(size_t{2} << 20), dst(src.size());
  for (int round = 0; round < 200; ++round) {
    for (size_t i = 0; i < src.size(); i += 4096) src[i] = static_cast<unsigned char>(round + i / 4096);
    pc.copy(dst.data(), src.data(), src.size());
    ASSERT_EQ(dst, src) << "round " << round;
  }
}

TEST(ParallelCopy, PiecesLaidEndToEnd) {
  std::mt19937 rng(11);
  std::vector<unsigned char> src(size_t{4} << 20);
  for (unsigned char& b : src) b = static_cast<unsigned char>(rng());
  // An expert's three slices and odd ones (an empty piece too), into one buffer with gaps between them.
  const size_t sizes[] = {880640, 0, 880640, 1290240, 7, 300001};
  std::vector<unsigned char> dst(size_t{4} << 20, 0x5A);
  std::vector<strata::ParallelCopy::Piece> pieces;
  size_t from = 0, to = 0;
  for (const size_t n : sizes) {
    pieces.push_back({dst.data() + to, src.data() + from, n});
    from += n + 13;
    to += n + 29;  // a gap of untouched bytes after each piece
  }
  for (unsigned threads : {1u, 3u, 5u}) {
    std::fill(dst.begin(), dst.end(), 0x5A);
    strata::ParallelCopy pc(threads);
    pc.copy(pieces);
    size_t at = 0;
    for (const strata::ParallelCopy::Piece& p : pieces) {
      ASSERT_EQ(std::memcmp(p.dst, p.src, p.n), 0) << threads << " threads, a piece of " << p.n;
      for (size_t i = 0; i < 29; ++i) ASSERT_EQ(p.dst[p.n + i], 0x5A) << "the gap after a piece was written";
      at += p.n;
    }
    EXPECT_GT(at, strata::ParallelCopy::kMinSplit);
  }
}

}  // namespace
