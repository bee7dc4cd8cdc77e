// ATTENTION's scores as the CUDA kernels evaluate them (plugins/cuda/attention_common.cuh, compiled here as host
// code with --fmad=false): the depth-first tree over permuted, zero-padded rows gives dot32_d's bits (the
// 32-lane order of docs/CANONICAL_ARITHMETIC.md section 6) for every head_dim the paths take.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attention_common.cuh"
#include "strata/format/canonical_double.hpp"

namespace {

using strata::gpu::attention::dot32_tile;
using strata::gpu::attention::permuted_index;
using strata::gpu::attention::tree_leaf;

TEST(AttentionDot, TreeLeavesAreTheBitReversedAccumulators) {
  std::vector<int> seen(32, 0);
  for (int p = 0; p < 32; ++p) {
    int rev = 0;
    for (int b = 0; b < 5; ++b) rev |= ((p >> b) & 1) << (4 - b);
    EXPECT_EQ(tree_leaf(p), rev) << p;
    ++seen[static_cast<size_t>(tree_leaf(p))];
  }
  for (int l = 0; l < 32; ++l) EXPECT_EQ(seen[static_cast<size_t>(l)], 1) << l;
}

// Rows of head_dim values in the kernels' permuted layout (32 * kT values, zeros past head_dim), `stride` apart,
// as floats (prefill) or as the floats converted to double (decode).
template <int kT, typename E = float>
std::vector<E> permuted_rows(const std::vector<std::vector<float>>& rows, int head_dim, int stride) {
  std::vector<E> out(rows.size() * static_cast<size_t>(stride), E(0));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int d = 0; d < head_dim; ++d) {
      out[r * static_cast<size_t>(stride) + permuted_index<kT>(d)] = static_cast<E>(rows[r][d]);
    }
  }
  return out;
}

// A 2 x 2 tile of scores equals dot32_d bit for bit; q rows sit 3 rows apart and keys 2 apart, as strided as in
// the kernels' micro tiles; rows of floats (prefill) or of the same values as doubles (decode).
template <int kT, typename E>
void check_tiles(int head_dim, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::uniform_int_distribution<int> special(0, 9);
  const int stride = 32 * kT + (sizeof(E) == sizeof(float) ? 4 : 2);
  for (int rep = 0; rep < 40; ++rep) {
    std::vector<std::vector<float>> q(6, std::vector<float>(static_cast<size_t>(head_dim)));
    std::vector<std::vector<float>> k(4, std::vector<float>(static_cast<size_t>(head_dim)));
    const float kscale = rep % 3 == 0 ? 1e-3f : rep % 3 == 1 ? 1.0f : 300.0f;
    for (auto& row : q) {
      for (float& x : row) {
        const int s = special(rng);
        x = s == 0 ? 0.0f : s == 1 ? -0.0f : nd(rng);
      }
    }
    for (auto& row : k) {
      for (float& x : row) x = special(rng) == 0 ? -0.0f : nd(rng) * kscale;
    }
    const std::vector<E> qp = permuted_rows<kT, E>(q, head_dim, stride);
    const std::vector<E> kp = permuted_rows<kT, E>(k, head_dim, stride);
    double s[2][2];
    dot32_tile<kT, 2, 2>(qp.data() + stride, 3 * stride, kp.data(), 2 * stride, s);
    for (int a = 0; a < 2; ++a) {
      for (int c = 0; c < 2; ++c) {
        const double want = strata::format::dot32_d(q[static_cast<size_t>(1 + 3 * a)].data(),
                                                    k[static_cast<size_t>(2 * c)].data(), head_dim);
        ASSERT_EQ(std::memcmp(&want, &s[a][c], sizeof want), 0)
            << "head_dim " << head_dim << " kT " << kT << " element bytes " << sizeof(E) << " score " << a << "," << c << ": " << s[a][c] << " vs "
            << want;
      }
    }
  }
}

TEST(AttentionDot, DepthFirstTileEqualsLaneDot) {
  std::mt19937 rng(5);
  for (int hd : {1, 17, 32, 48, 64}) check_tiles<2, float>(hd, rng);
  for (int hd : {65, 80, 96, 100, 128}) check_tiles<4, float>(hd, rng);
  for (int hd : {129, 160, 200, 255, 256}) check_tiles<8, float>(hd, rng);
}

TEST(AttentionDot, DepthFirstTileOfDoublesEqualsLaneDot) {
  std::mt19937 rng(6);
  for (int hd : {1, 8, 17, 32, 37, 64}) check_tiles<2, double>(hd, rng);
  for (int hd : {65, 96, 100, 128}) check_tiles<4, double>(hd, rng);
  for (int hd : {129, 200, 255, 256}) check_tiles<8, double>(hd, rng);
}

// One score per thread as the decode kernel calls it (1 x 1, no strides) agrees too.
TEST(AttentionDot, SingleScoreEqualsSerialDot) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (int hd : {64, 128}) {
    for (int rep = 0; rep < 100; ++rep) {
      std::vector<std::vector<float>> q(1, std::vector<float>(static_cast<size_t>(hd)));
      std::vector<std::vector<float>> k(1, std::vector<float>(static_cast<size_t>(hd)));
      for (float& x : q[0]) x = nd(rng);
      for (float& x : k[0]) x = nd(rng) * 40.0f;
      const std::vector<float> qp = permuted_rows<4>(q, hd, 132);
      const std::vector<float> kp = permuted_rows<4>(k, hd, 132);
      double s[1][1];
      dot32_tile<4, 1, 1>(qp.data(), 0, kp.data(), 0, s);
      const double want = strata::format::dot32_serial_d(q[0].data(), k[0].data(), hd);
      ASSERT_EQ(std::memcmp(&want, &s[0][0], sizeof want), 0) << hd << ": " << s[0][0] << " vs " << want;
    }
  }
}

// The decode kernel's call: 2 heads x 1 key from rows of doubles, the second head one row on, or the same row again
// (q stride 0, an odd group's last pair): each equals the serial dot's bits.
TEST(AttentionDot, HeadPairOfDoublesEqualsSerialDot) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  for (int hd : {37, 128}) {
    const int stride = 32 * 4 + 2;
    for (int rep = 0; rep < 100; ++rep) {
      std::vector<std::vector<float>> q(2, std::vector<float>(static_cast<size_t>(hd)));
      std::vector<std::vector<float>> k(1, std::vector<float>(static_cast<size_t>(hd)));
      for (auto& row : q) {
        for (float& x : row) x = nd(rng);
      }
      for (float& x : k[0]) x = nd(rng) * 40.0f;
      const std::vector<double> qp = permuted_rows<4, double>(q, hd, stride);
      const std::vector<double> kp = permuted_rows<4, double>(k, hd, stride);
      for (int q_stride : {stride, 0}) {
        double s[2][1];
        dot32_tile<4, 2, 1>(qp.data(), q_stride, kp.data(), 0, s);
        for (int a = 0; a < 2; ++a) {
          const size_t row = q_stride == 0 ? 0 : static_cast<size_t>(a);
          const double want = strata::format::dot32_serial_d(q[row].data(), k[0].data(), hd);
          ASSERT_EQ(std::memcmp(&want, &s[a][0], sizeof want), 0) << hd << " head " << a << ": " << s[a][0] << " vs " << want;
        }
      }
    }
  }
}

}  // namespace
