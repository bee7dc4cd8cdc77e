// The fused kernels' shared pieces, host pass: the two sum shapes the norm kernels use (a 32-lane group's slots,
// a 256-thread block's tree; the fused ADD + RMS_NORM takes the block for rows the plain op gives a group) are
// both the 256-lane order of docs/CANONICAL_ARITHMETIC.md section 6; ROPE's pair map covers each rotated value
// once; a rope after a norm reads the norm's rounded floats; and the descriptor tests that decide whether ops may
// run together (fusion_match.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "fusion_match.hpp"
#include "rms_row.cuh"
#include "rope_pair.cuh"

namespace {

using strata::format::kNormLanes;

// The group path: lane l holds values l + 32 s in slot s; slots combine at m = 4, 2, 1, then lanes at 16 .. 1.
double group_order(const std::vector<float>& x) {
  double acc[32][strata::gpu::kNormSlots];
  for (int l = 0; l < 32; ++l) {
    for (int s = 0; s < strata::gpu::kNormSlots; ++s) {
      const size_t i = static_cast<size_t>(l + 32 * s);
      const double v = i < x.size() ? static_cast<double>(x[i]) : 0.0;
      acc[l][s] = v * v;
    }
    for (int m = strata::gpu::kNormSlots / 2; m > 0; m /= 2) {
      for (int s = 0; s < m; ++s) acc[l][s] = acc[l][s] + acc[l][s + m];
    }
  }
  double lane[32];
  for (int l = 0; l < 32; ++l) lane[l] = acc[l][0];
  for (int m = 16; m > 0; m /= 2) {
    double next[32];
    for (int l = 0; l < 32; ++l) next[l] = lane[l] + lane[l ^ m];
    std::memcpy(lane, next, sizeof lane);
  }
  return lane[0];
}

// The block path: thread t accumulates t, t + 256, ... from +0.0, then the tree m = 128 .. 1.
double block_order(const std::vector<float>& x) {
  double lanes[kNormLanes];
  for (int t = 0; t < kNormLanes; ++t) {
    double acc = 0.0;
    for (size_t i = static_cast<size_t>(t); i < x.size(); i += kNormLanes) {
      acc = acc + static_cast<double>(x[i]) * static_cast<double>(x[i]);
    }
    lanes[t] = acc;
  }
  for (int m = kNormLanes / 2; m > 0; m /= 2) {
    for (int t = 0; t < m; ++t) lanes[t] = lanes[t] + lanes[t + m];
  }
  return lanes[0];
}

// A dense descriptor (rows contiguous, dimensions past ne's end of size 1).
strata_tensor dense(const void* data, strata::format::GgmlType type, std::initializer_list<int64_t> ne) {
  strata_tensor t{};
  t.data = const_cast<void*>(data);
  t.type = static_cast<uint32_t>(type);
  int d = 0;
  for (int64_t v : ne) t.ne[d++] = v;
  for (; d < 4; ++d) t.ne[d] = 1;
  t.nb[0] = type == strata::format::GgmlType::F32 ? 4 : 34;
  t.nb[1] = strata::format::row_bytes(type, static_cast<uint64_t>(t.ne[0]));
  for (d = 2; d < 4; ++d) t.nb[d] = t.nb[d - 1] * static_cast<uint64_t>(t.ne[d - 1]);
  return t;
}
strata_tensor f32(const float* data, std::initializer_list<int64_t> ne) {
  return dense(data, strata::format::GgmlType::F32, ne);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(FusionRows, GroupAndBlockSumsAreTheLaneOrder) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (int n : {1, 31, 64, 128, 200, 256, 300, 2048, 4096 + 17}) {
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = nd(rng) * (rep % 2 == 0 ? 1.0f : 1e-3f);
      const double lanes = strata::format::dot_lanes_d<kNormLanes>(x.data(), x.data(), n);
      ASSERT_TRUE(same_bits(block_order(x), lanes)) << "n " << n;
      if (n <= kNormLanes) ASSERT_TRUE(same_bits(group_order(x), lanes)) << "n " << n;
    }
  }
}

TEST(FusionRows, RopePairsCoverTheRotatedValuesOnce) {
  for (bool neox : {false, true}) {
    for (int n_rot : {2, 32, 64, 128, 256}) {
      std::vector<int> seen(static_cast<size_t>(n_rot), 0);
      for (int k = 0; k < n_rot / 2; ++k) {
        int ia = -1, ib = -1;
        strata::gpu::rope_pair_index(k, n_rot, neox, ia, ib);
        ASSERT_TRUE(ia >= 0 && ib > ia && ib < n_rot);
        ++seen[static_cast<size_t>(ia)];
        ++seen[static_cast<size_t>(ib)];
      }
      for (int c : seen) EXPECT_EQ(c, 1) << "n_rot " << n_rot << (neox ? " neox" : "");
    }
  }
}

// Norm then rope of one head as the fused kernel composes them (the rope reads the norm's floats) equals the two
// ops' formulas applied one after the other with an explicit float between them.
TEST(FusionRows, NormThenRopeComposesThroughFloats) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int hd = 128, n_rot = 128;
  std::vector<float> x(hd), w(hd);
  for (float& v : x) v = nd(rng);
  for (float& v : w) v = 1.0f + 0.1f * nd(rng);
  const double eps = 1e-6;
  const double scale = strata::gpu::rms_scale(strata::format::dot_lanes_d<kNormLanes>(x.data(), x.data(), hd), hd, eps);
  std::vector<float> normed(hd);
  for (int i = 0; i < hd; ++i) {
    normed[static_cast<size_t>(i)] = strata::gpu::rms_value(x[static_cast<size_t>(i)], scale, w.data(), i);
    const double want = static_cast<double>(x[static_cast<size_t>(i)]) * (1.0 / std::sqrt(
        strata::format::dot_lanes_d<kNormLanes>(x.data(), x.data(), hd) / hd + eps)) * static_cast<double>(w[static_cast<size_t>(i)]);
    ASSERT_EQ(normed[static_cast<size_t>(i)], static_cast<float>(want));
  }
  const double pos = 517.0, fscale = 1.0;
  for (int k = 0; k < n_rot / 2; ++k) {
    int ia, ib;
    strata::gpu::rope_pair_index(k, n_rot, true, ia, ib);
    const double inv = strata::format::rope_inv_freq(1e6, k, n_rot);
    float ya, yb;
    strata::gpu::rope_rotate(normed[static_cast<size_t>(ia)], normed[static_cast<size_t>(ib)], pos, fscale, inv, ya, yb);
    double s, c;
    strata::format::sincos_d(pos * fscale * inv, &s, &c);
    const double a = normed[static_cast<size_t>(ia)], b = normed[static_cast<size_t>(ib)];
    EXPECT_EQ(ya, static_cast<float>(a * c - b * s));
    EXPECT_EQ(yb, static_cast<float>(a * s + b * c));
  }
}

TEST(FusionMatch, SpansSameAndDisjoint) {
  using strata::gpu::disjoint;
  using strata::gpu::same_or_disjoint;
  alignas(64) static float buf[4096];
  // q [64, 4 heads, 2 tokens] and q_alt right after it: disjoint; q as 2-D rows of 256: the same bytes, not the
  // same tensor.
  const strata_tensor q = f32(buf, {64, 4, 2});
  const strata_tensor q_alt = f32(buf + 512, {64, 4, 2});
  const strata_tensor q_rows = f32(buf, {256, 2});
  EXPECT_TRUE(disjoint(q, q_alt));
  EXPECT_TRUE(same_or_disjoint(q, q));
  EXPECT_FALSE(same_or_disjoint(q, q_rows));
  // One value of overlap is a hazard.
  const strata_tensor shifted = f32(buf + 511, {64, 4, 2});
  EXPECT_FALSE(disjoint(q, shifted));
  EXPECT_FALSE(same_or_disjoint(q, shifted));
  // A Q8_0 cache's span counts blocks: 2 columns of 64 values are 2 x 68 bytes.
  alignas(64) static unsigned char cache[1024];
  const strata_tensor kv = dense(cache, strata::format::GgmlType::Q8_0, {64, 2});
  const strata::gpu::ByteSpan sp = strata::gpu::byte_span(kv);
  EXPECT_EQ(sp.hi - sp.lo, 136u);
  const strata_tensor next = dense(cache + 136, strata::format::GgmlType::Q8_0, {64, 2});
  EXPECT_TRUE(disjoint(kv, next));
  const strata_tensor none = f32(nullptr, {64, 2});
  EXPECT_TRUE(disjoint(none, q));
  EXPECT_TRUE(strata::gpu::all_same_or_disjoint({&q, &q_alt, &q}));
  EXPECT_FALSE(strata::gpu::all_same_or_disjoint({&q, &q_alt, &shifted}));
}

}  // namespace
