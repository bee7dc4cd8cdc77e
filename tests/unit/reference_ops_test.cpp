// The reference backend's ops on small inputs whose results are known independently (by hand, or from the
// format library's own functions for the canonical parts), and its refusals of bad operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"

namespace {

using strata::make_tensor;
using strata::run_reference;
using strata::tensor_f32;
using strata::tensor_i32;
using strata::format::GgmlType;
namespace fmt = strata::format;

strata_op make_op(strata_op_kind kind) {
  strata_op op{};
  op.struct_size = sizeof(strata_op);
  op.kind = kind;
  for (strata_tensor& s : op.src) s = strata::no_tensor();
  op.dst = strata::no_tensor();
  return op;
}

std::vector<float> ramp(size_t n, float scale = 0.1f, float offset = -1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 7) % 23);
  return v;
}

TEST(ReferenceOps, GetRowsDecodesTheChosenRows) {
  const int64_t n = 64, rows = 5;
  const std::vector<float> src = ramp(n * rows);
  std::vector<uint8_t> table(fmt::row_bytes(GgmlType::Q8_0, n) * rows);
  fmt::quantize_row(GgmlType::Q8_0, src.data(), table.data(), n * rows);
  const std::vector<int32_t> ids = {4, 0, 4};
  std::vector<float> dst(n * 3);
  strata_op op = make_op(STRATA_OP_GET_ROWS);
  op.src[0] = make_tensor(table.data(), GgmlType::Q8_0, {n, rows});
  op.src[1] = tensor_i32(ids.data(), {3});
  op.dst = tensor_f32(dst.data(), {n, 3});
  run_reference(op);
  std::vector<float> want(n);
  for (size_t t = 0; t < 3; ++t) {
    fmt::dequantize_row(GgmlType::Q8_0, table.data() + fmt::row_bytes(GgmlType::Q8_0, n) * ids[t], want.data(), n);
    EXPECT_EQ(0, std::memcmp(want.data(), dst.data() + t * n, n * sizeof(float))) << t;
  }
  const std::vector<int32_t> bad = {5};
  op.src[1] = tensor_i32(bad.data(), {1});
  op.dst = tensor_f32(dst.data(), {n, 1});
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, RmsNormByHand) {
  const std::vector<float> x = {1, 2, 3, 4, -2, 0, 0, 2};  // two rows of 4
  const std::vector<float> w = {1, 0.5f, 2, -1};
  std::vector<float> dst(8);
  strata_op op = make_op(STRATA_OP_RMS_NORM);
  op.src[0] = tensor_f32(x.data(), {4, 2});
  op.src[1] = tensor_f32(w.data(), {4});
  op.dst = tensor_f32(dst.data(), {4, 2});
  op.f[0] = 1e-5f;
  run_reference(op);
  const double r0 = 1.0 / std::sqrt(30.0 / 4 + 1e-5), r1 = 1.0 / std::sqrt(8.0 / 4 + 1e-5);
  const double want[8] = {1 * r0, 2 * r0 * 0.5, 3 * r0 * 2, -4 * r0, -2 * r1, 0, 0, -2 * r1};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(static_cast<double>(dst[i]), want[i], 1e-6) << i;
  op.src[1] = strata::no_tensor();  // no weight: plain normalisation
  run_reference(op);
  EXPECT_NEAR(static_cast<double>(dst[3]), 4 * r0, 1e-6);
}

TEST(ReferenceOps, MulMatIsTheCanonicalDotPerRowAndColumn) {
  const int64_t n_in = 256, n_out = 3, n_tok = 2;
  const std::vector<float> wsrc = ramp(n_in * n_out, 0.01f, -0.1f);
  const std::vector<float> x = ramp(n_in * n_tok, 0.2f, -2.0f);
  std::vector<float> dst(n_out * n_tok);
  for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F32}) {
    std::vector<uint8_t> w(fmt::row_bytes(t, n_in) * n_out);
    if (t == GgmlType::F32) {
      std::memcpy(w.data(), wsrc.data(), w.size());
    } else {
      fmt::quantize_row(t, wsrc.data(), w.data(), n_in * n_out);
    }
    strata_op op = make_op(STRATA_OP_MUL_MAT);
    op.src[0] = make_tensor(w.data(), t, {n_in, n_out});
    op.src[1] = tensor_f32(x.data(), {n_in, n_tok});
    op.dst = tensor_f32(dst.data(), {n_out, n_tok});
    run_reference(op);
    for (int64_t c = 0; c < n_tok; ++c) {
      std::vector<fmt::block_q8_1> xq(n_in / 32);
      fmt::quantize_row_q8_1(x.data() + c * n_in, xq.data(), n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        const uint8_t* row = w.data() + fmt::row_bytes(t, n_in) * o;
        const float want = t == GgmlType::F32 ? fmt::canonical_dot_f(t, row, x.data() + c * n_in, n_in)
                                              : fmt::canonical_dot(t, row, xq.data(), n_in);
        EXPECT_EQ(fmt::f32_bits(want), fmt::f32_bits(dst[c * n_out + o])) << fmt::traits(t).name;
      }
    }
  }
}

TEST(ReferenceOps, MulMatOfAnIdentityIsTheInput) {
  const int64_t n = 8;
  std::vector<float> eye(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1.0f;
  const std::vector<float> x = ramp(n * 3);
  std::vector<float> dst(n * 3);
  strata_op op = make_op(STRATA_OP_MUL_MAT);
  op.src[0] = tensor_f32(eye.data(), {n, n});
  op.src[1] = tensor_f32(x.data(), {n, 3});
  op.dst = tensor_f32(dst.data(), {n, 3});
  run_reference(op);
  EXPECT_EQ(x, dst);
  op.dst = tensor_f32(dst.data(), {n, 2});
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, AddMulBroadcastAndSwiglu) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> row = {10, 20, 30};
  std::vector<float> dst(6);
  strata_op op = make_op(STRATA_OP_ADD);
  op.src[0] = tensor_f32(a.data(), {3, 2});
  op.src[1] = tensor_f32(row.data(), {3});
  op.dst = tensor_f32(dst.data(), {3, 2});
  run_reference(op);
  EXPECT_EQ(dst, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  op.kind = STRATA_OP_MUL;
  run_reference(op);
  EXPECT_EQ(dst, (std::vector<float>{10, 40, 90, 40, 100, 180}));
  op.src[1] = tensor_f32(a.data(), {3, 2});
  run_reference(op);
  EXPECT_EQ(dst, (std::vector<float>{1, 4, 9, 16, 25, 36}));
  op.kind = STRATA_OP_SWIGLU;
  const std::vector<float> g = {-3, -0.5f, 0, 0.5f, 3, 20};
  op.src[0] = tensor_f32(g.data(), {3, 2});
  run_reference(op);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(fmt::f32_bits(dst[i]), fmt::f32_bits(fmt::swiglu_c(g[i], a[i])));
    const double silu = static_cast<double>(g[i]) / (1.0 + std::exp(-static_cast<double>(g[i])));
    EXPECT_NEAR(static_cast<double>(dst[i]), silu * static_cast<double>(a[i]), 1e-5);
  }
  op.src[1] = tensor_f32(row.data(), {3});  // SWIGLU takes no broadcast
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, RopeRotatesThePairsOfEachMode) {
  // One head of 6 values, n_rot 4, base 100: pair p turns by pos * 100^(-2p/4) = pos * {1, 0.1}.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> pos = {0, 3};
  std::vector<float> dst(12);
  strata_op op = make_op(STRATA_OP_ROPE);
  op.src[0] = tensor_f32(x.data(), {6, 1, 2});
  op.src[1] = tensor_i32(pos.data(), {2});
  op.dst = tensor_f32(dst.data(), {6, 1, 2});
  op.i[1] = 4;
  op.f[0] = 100.0f;
  op.f[1] = 1.0f;
  const auto rot = [](double a, double b, double th) {
    return std::pair<double, double>{a * std::cos(th) - b * std::sin(th), a * std::sin(th) + b * std::cos(th)};
  };
  for (int mode : {0, 2}) {
    op.i[0] = mode;
    run_reference(op);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(dst[i], x[i]) << "position 0 is the identity";
    const int a0 = 0, b0 = mode == 0 ? 1 : 2, a1 = mode == 0 ? 2 : 1, b1 = 3;
    const auto p0 = rot(static_cast<double>(x[a0]), static_cast<double>(x[b0]), 3.0);
    const auto p1 = rot(static_cast<double>(x[a1]), static_cast<double>(x[b1]), 0.3);
    EXPECT_NEAR(static_cast<double>(dst[6 + a0]), p0.first, 1e-6);
    EXPECT_NEAR(static_cast<double>(dst[6 + b0]), p0.second, 1e-6);
    EXPECT_NEAR(static_cast<double>(dst[6 + a1]), p1.first, 1e-6);
    EXPECT_NEAR(static_cast<double>(dst[6 + b1]), p1.second, 1e-6);
    EXPECT_EQ(dst[10], 5.0f);
    EXPECT_EQ(dst[11], 6.0f);
  }
  op.i[0] = 1;
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, KvStoreWritesOnlyTheGivenColumns) {
  const int64_t dim = 64, ctx = 4;
  const std::vector<float> x = ramp(dim * 2, 0.37f, -4.0f);
  const std::vector<int32_t> pos = {2, 0};
  for (GgmlType t : {GgmlType::F16, GgmlType::Q8_0}) {
    const size_t col = fmt::row_bytes(t, dim);
    std::vector<uint8_t> cache(col * ctx, 0xab);
    strata_op op = make_op(STRATA_OP_KV_STORE);
    op.dst = make_tensor(cache.data(), t, {dim, ctx});
    op.src[0] = tensor_f32(x.data(), {dim, 2});
    op.src[1] = tensor_i32(pos.data(), {2});
    run_reference(op);
    for (int c = 0; c < 2; ++c) {
      std::vector<uint8_t> want(col);
      if (t == GgmlType::F16) {
        for (int64_t i = 0; i < dim; ++i) {
          const uint16_t h = fmt::fp32_to_fp16(x[c * dim + i]);
          std::memcpy(want.data() + 2 * i, &h, 2);
        }
      } else {
        fmt::quantize_row_q8_0(x.data() + c * dim, reinterpret_cast<fmt::block_q8_0*>(want.data()), dim);
      }
      EXPECT_EQ(0, std::memcmp(want.data(), cache.data() + col * pos[c], col)) << fmt::traits(t).name;
    }
    for (int untouched : {1, 3}) {
      for (size_t b = 0; b < col; ++b) ASSERT_EQ(cache[col * untouched + b], 0xab);
    }
  }
}

// An F16 cache of columns given as floats (exact in f16).
std::vector<uint16_t> f16_cache(const std::vector<float>& v) {
  std::vector<uint16_t> c(v.size());
  for (size_t i = 0; i < v.size(); ++i) c[i] = fmt::fp32_to_fp16(v[i]);
  return c;
}

TEST(ReferenceOps, AttentionIsCausalAndGrouped) {
  // head_dim 2, 4 query heads over 2 kv heads, 3 cache columns.
  const std::vector<float> k = {1, 0, 0, 1,  0, 1, 1, 0,  1, 1, -1, 0};
  const std::vector<float> v = {1, 2, 3, 4,  5, 6, 7, 8,  9, 10, 11, 12};
  const auto kc = f16_cache(k), vc = f16_cache(v);
  const std::vector<float> q = {2, 0, 0, 2, 1, 1, 0, 0,   2, 0, 0, 2, 1, 1, 0, 0};  // 2 tokens
  const std::vector<int32_t> pos = {0, 2};
  std::vector<float> dst(16);
  strata_op op = make_op(STRATA_OP_ATTENTION);
  op.src[0] = tensor_f32(q.data(), {2, 4, 2});
  op.src[1] = make_tensor(kc.data(), GgmlType::F16, {4, 3});
  op.src[2] = make_tensor(vc.data(), GgmlType::F16, {4, 3});
  op.src[3] = tensor_i32(pos.data(), {2});
  op.dst = tensor_f32(dst.data(), {8, 2});
  op.i[0] = 4;
  op.i[1] = 2;
  op.f[0] = 0.5f;
  run_reference(op);
  // Token 0 sees only column 0: every head returns its kv head's first value row.
  const std::vector<float> first = {1, 2, 1, 2, 3, 4, 3, 4};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(dst[i], first[i]) << i;
  // Token 1, head 0 (kv head 0): scores 0.5 * q.k = {1, 0, 1}.
  const double e1 = std::exp(1.0), e0 = 1.0, z = 2 * e1 + e0;
  EXPECT_NEAR(static_cast<double>(dst[8]), (e1 * 1 + e0 * 5 + e1 * 9) / z, 1e-6);
  EXPECT_NEAR(static_cast<double>(dst[9]), (e1 * 2 + e0 * 6 + e1 * 10) / z, 1e-6);
  // Head 3 (kv head 1) has a zero query: equal weights over the three columns.
  EXPECT_NEAR(static_cast<double>(dst[14]), (3 + 7 + 11) / 3.0, 1e-6);
  EXPECT_NEAR(static_cast<double>(dst[15]), (4 + 8 + 12) / 3.0, 1e-6);
  op.i[1] = 3;  // does not divide n_head
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, RouterSoftmaxTopKNormalizedAndBiased) {
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f};  // a tie between experts 1 and 3
  std::vector<int32_t> ids(2);
  std::vector<float> w(2);
  strata_op op = make_op(STRATA_OP_ROUTER);
  op.src[0] = tensor_f32(logits.data(), {4, 1});
  op.dst = tensor_i32(ids.data(), {2, 1});
  op.src[2] = tensor_f32(w.data(), {2, 1});
  op.i[0] = 2;
  op.f[0] = 1.0f;
  run_reference(op);
  const double z = 1 + 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3}));  // ties go to the lower id first
  EXPECT_NEAR(static_cast<double>(w[0]), std::exp(2.0) / z, 1e-7);
  op.i[2] = 1;  // normalise
  op.f[0] = 2.0f;
  run_reference(op);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  EXPECT_FLOAT_EQ(w[1], 1.0f);
  // A bias selects expert 0 but does not enter its weight.
  const std::vector<float> bias = {1.0f, 0.0f, 0.0f, 0.0f};
  op.src[1] = tensor_f32(bias.data(), {4});
  op.i[1] = 1;  // sigmoid
  op.i[2] = 0;
  op.f[0] = 1.0f;
  run_reference(op);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1}));  // 0.5 + 1 > sigmoid(2) = 0.88
  EXPECT_NEAR(static_cast<double>(w[0]), 0.5, 1e-7);
  EXPECT_NEAR(static_cast<double>(w[1]), 1 / (1 + std::exp(-2.0)), 1e-7);
}

TEST(ReferenceOps, SoftmaxByHand) {
  const std::vector<float> x = {1, 2, 3, 0, 0, 0};
  std::vector<float> dst(6);
  strata_op op = make_op(STRATA_OP_SOFTMAX);
  op.src[0] = tensor_f32(x.data(), {3, 2});
  op.dst = tensor_f32(dst.data(), {3, 2});
  op.f[0] = 2.0f;
  run_reference(op);
  const double z = std::exp(2.0) + std::exp(4.0) + std::exp(6.0);
  EXPECT_NEAR(static_cast<double>(dst[2]), std::exp(6.0) / z, 1e-7);
  EXPECT_NEAR(static_cast<double>(dst[4]), 1.0 / 3, 1e-7);
}

// A small expert set: 3 experts of Q8_0 (n_embd 64, n_ff 32), stored one after the other.
struct Experts {
  std::vector<std::vector<uint8_t>> gate, up, down;
  std::vector<strata_expert_weights> weights;
};

Experts make_experts(int n, int64_t n_embd, int64_t n_ff) {
  Experts e;
  for (int i = 0; i < n; ++i) {
    const auto quant = [&](int64_t rows, int64_t cols, float scale) {
      std::vector<float> v = ramp(rows * cols, scale * static_cast<float>(i + 1), -0.3f);
      std::vector<uint8_t> q(fmt::row_bytes(GgmlType::Q8_0, cols) * rows);
      fmt::quantize_row(GgmlType::Q8_0, v.data(), q.data(), rows * cols);
      return q;
    };
    e.gate.push_back(quant(n_ff, n_embd, 0.02f));
    e.up.push_back(quant(n_ff, n_embd, 0.03f));
    e.down.push_back(quant(n_embd, n_ff, 0.01f));
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t q8 = static_cast<uint32_t>(GgmlType::Q8_0);
    e.weights.push_back({e.gate[i].data(), e.up[i].data(), e.down[i].data(), q8, q8, q8, 0});
  }
  return e;
}

TEST(ReferenceOps, MoeSumsWeightedRowsInAscendingExpertOrder) {
  const int64_t n_embd = 64, n_ff = 32;
  const Experts ex = make_experts(3, n_embd, n_ff);
  const std::vector<float> x = ramp(n_embd * 3, 0.15f, -1.5f);  // 3 tokens; token 2 is routed nowhere
  // Experts 0 and 2 are listed: expert 0 takes tokens 1 and 0, expert 2 takes token 0.
  const uint32_t expert_ids[] = {0, 2};
  const strata_expert_weights weights[] = {ex.weights[0], ex.weights[2]};
  const uint32_t offsets[] = {0, 2, 3};
  const uint32_t token_index[] = {1, 0, 0};
  const float route_weight[] = {0.75f, 0.25f, 0.5f};
  std::vector<float> rows(n_embd * 3), dst(n_embd * 3, 123.0f);
  strata_moe_op m{static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 3, 2, expert_ids, weights,
                  offsets, token_index, route_weight, x.data(), rows.data(), nullptr};
  strata_op op = make_op(STRATA_OP_MOE);
  op.dst = tensor_f32(dst.data(), {n_embd, 3});
  op.extra = &m;
  run_reference(op);
  std::vector<float> r(n_embd);
  for (int p = 0; p < 3; ++p) {
    const strata_expert_weights& w = weights[p < 2 ? 0 : 1];
    const fmt::ExpertMatrices e{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, w.gate, w.up, w.down, n_embd, n_ff};
    fmt::canonical_expert_row(e, x.data() + token_index[p] * n_embd, route_weight[p], r.data());
    EXPECT_EQ(0, std::memcmp(r.data(), rows.data() + p * n_embd, n_embd * sizeof(float))) << "pair " << p;
  }
  for (int64_t d = 0; d < n_embd; ++d) {
    EXPECT_EQ(fmt::f32_bits(dst[n_embd + d]), fmt::f32_bits(rows[d]));                     // token 1: one row
    EXPECT_EQ(fmt::f32_bits(dst[d]), fmt::f32_bits(rows[n_embd + d] + rows[2 * n_embd + d]));  // token 0: e0 + e2
    EXPECT_EQ(dst[2 * n_embd + d], 0.0f);                                                   // token 2: none
  }
  const uint32_t descending[] = {2, 0};
  m.expert_ids = descending;
  EXPECT_THROW(run_reference(op), strata::Error);
}

// MOE_ROUTED rows out (i[2] = 1): each pair whose entry has a gate gets canonical_expert_row in dst's column
// t * k + j (dst rows strided); the columns of the NULL entry's pairs keep what was there; nothing is summed. A
// dst of the summing shape, a src3, a ready flag and an i[2] other than 0 or 1 are refused by name.
TEST(ReferenceOps, MoeRoutedRowsOutWritesEachComputedPairsColumn) {
  const int64_t n_embd = 64, n_ff = 32, k = 2, n_tok = 3, stride = n_embd + 3;
  Experts ex = make_experts(3, n_embd, n_ff);
  ex.weights[1].gate = ex.weights[1].up = ex.weights[1].down = nullptr;  // expert 1: computed elsewhere
  const auto q8 = static_cast<uint32_t>(GgmlType::Q8_0);
  const strata_expert_table table{static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 3, q8, q8, q8,
                                  ex.weights.data(), nullptr};
  const std::vector<float> x = ramp(n_embd * n_tok, 0.15f, -1.5f);
  const std::vector<int32_t> ids = {2, 0, 1, 2, 0, 1};
  const std::vector<float> weights = {0.5f, 0.25f, 0.75f, 0.125f, 1.0f, 0.5f};
  const float sentinel = -12345.0f;
  std::vector<float> dst(stride * k * n_tok, sentinel);
  strata_op op = make_op(STRATA_OP_MOE_ROUTED);
  op.src[0] = tensor_f32(x.data(), {n_embd, n_tok});
  op.src[1] = tensor_i32(ids.data(), {k, n_tok});
  op.src[2] = tensor_f32(weights.data(), {k, n_tok});
  op.dst = tensor_f32(dst.data(), {n_embd, k * n_tok});
  op.dst.nb[1] = stride * sizeof(float);
  op.dst.nb[2] = op.dst.nb[3] = op.dst.nb[1] * static_cast<uint64_t>(k * n_tok);
  op.extra = &table;
  op.i[2] = 1;
  run_reference(op);
  std::vector<float> want(n_embd);
  for (int64_t p = 0; p < k * n_tok; ++p) {
    const float* col = dst.data() + p * stride;
    const strata_expert_weights& w = ex.weights[static_cast<size_t>(ids[p])];
    if (w.gate == nullptr) {
      for (int64_t d = 0; d < stride; ++d) EXPECT_EQ(col[d], sentinel) << "pair " << p << " (NULL entry) value " << d;
      continue;
    }
    const fmt::ExpertMatrices e{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, w.gate, w.up, w.down, n_embd, n_ff};
    fmt::canonical_expert_row(e, x.data() + (p / k) * n_embd, weights[p], want.data());
    EXPECT_EQ(0, std::memcmp(want.data(), col, n_embd * sizeof(float))) << "pair " << p;
    for (int64_t d = n_embd; d < stride; ++d) EXPECT_EQ(col[d], sentinel) << "pair " << p << " padding " << d;
  }

  const auto refused = [&](strata_op bad, const std::string& needle) {
    try {
      run_reference(bad);
      ADD_FAILURE() << "accepted; expected a refusal naming '" << needle << "'";
    } catch (const strata::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  strata_op sums_shape = op;
  sums_shape.dst = tensor_f32(dst.data(), {n_embd, n_tok});
  refused(sums_shape, "expected [n_embd, k * n_tok] = [64, 6]");
  std::vector<float> pre(n_embd * k * n_tok + 1, 0.0f);
  strata_op with_src3 = op;
  with_src3.src[3] = tensor_f32(pre.data(), {n_embd, k * n_tok});
  refused(with_src3, "takes no src3");
  with_src3.i[0] = 1;
  refused(with_src3, "takes no src3");
  strata_op bad_mode = op;
  bad_mode.i[2] = 2;
  refused(bad_mode, "i[2] (rows out) must be 0 or 1");
}

TEST(ReferenceOps, UnknownKindIsRefused) {
  strata_op op = make_op(STRATA_OP_ADD);
  op.kind = 99;
  EXPECT_THROW(run_reference(op), strata::Error);
  EXPECT_STREQ(strata::op_kind_name(STRATA_OP_MUL_MAT), "MUL_MAT");
}

}  // namespace

namespace {

// TIMESTAMP: the host's monotonic clock, so stamps never go back; a wrong dst type is refused by name.
TEST(ReferenceOps, TimestampIsMonotonicAndTyped) {
  int64_t t[2] = {0, 0};
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = STRATA_OP_TIMESTAMP;
  op.dst = strata::make_tensor(&t[0], strata::format::GgmlType::I64, {1});
  strata::run_reference(op);
  op.dst = strata::make_tensor(&t[1], strata::format::GgmlType::I64, {1});
  strata::run_reference(op);
  EXPECT_GT(t[0], 0);
  EXPECT_GE(t[1], t[0]);
  float f = 0;
  op.dst = strata::tensor_f32(&f, {1});
  try {
    strata::run_reference(op);
    ADD_FAILURE() << "an f32 dst was accepted";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("TIMESTAMP"), std::string::npos) << e.what();
  }
}

// MOE_ROUTED with precomputed rows: a token whose experts all have NULL gates sums src3's columns in ascending
// expert id (the order shows: (1e8 + -1e8) + 1 is 1, other orders give 0); without src3 such an entry throws.
TEST(ReferenceOps, MoeRoutedPrecomputedRowsInExpertOrder) {
  const int64_t n = 32, k = 3;
  std::vector<strata_expert_weights> entries(4);
  for (strata_expert_weights& w : entries) {
    w.gate_type = w.up_type = w.down_type = static_cast<uint32_t>(GgmlType::Q8_0);
  }
  const auto q8 = static_cast<uint32_t>(GgmlType::Q8_0);
  const strata_expert_table table{static_cast<uint32_t>(n), static_cast<uint32_t>(n), 4, q8, q8, q8, entries.data(), nullptr};
  const std::vector<float> x = ramp(n);
  const std::vector<int32_t> ids = {3, 0, 2};  // ascending id order: j = 1, 2, 0
  const std::vector<float> weights = {0.5f, 0.25f, 0.125f};
  std::vector<float> pre(n * k);
  for (int64_t d = 0; d < n; ++d) {
    pre[d] = 1.0f;            // j = 0 (expert 3), added last
    pre[n + d] = 1e8f;        // j = 1 (expert 0), first
    pre[2 * n + d] = -1e8f;   // j = 2 (expert 2), second
  }
  std::vector<float> dst(n, -7.0f);
  strata_op op = make_op(STRATA_OP_MOE_ROUTED);
  op.src[0] = tensor_f32(x.data(), {n, 1});
  op.src[1] = tensor_i32(ids.data(), {k, 1});
  op.src[2] = tensor_f32(weights.data(), {k, 1});
  op.src[3] = tensor_f32(pre.data(), {n, k});
  op.dst = tensor_f32(dst.data(), {n, 1});
  op.extra = &table;
  run_reference(op);
  for (int64_t d = 0; d < n; ++d) EXPECT_EQ(dst[d], 1.0f) << d;

  op.src[3] = tensor_f32(pre.data(), {n, k + 1});
  EXPECT_THROW(run_reference(op), strata::Error);
  op.src[3] = strata::no_tensor();
  try {
    run_reference(op);
    ADD_FAILURE() << "a routed entry with a NULL gate ran without src3";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("expert 0"), std::string::npos) << e.what();
  }
}

}  // namespace

// ---- backend 1.6 (gpt-oss): sliding windows, sinks, YaRN, gating 2, expert forms --------------------------------

namespace {

// Attention of one token over an F32 cache: head_dim 32, two query heads over one kv head.
struct SmallAttention {
  static constexpr int64_t hd = 32, nh = 2, n_ctx = 12;
  std::vector<float> q, k, v, out;
  std::vector<int32_t> pos;
  explicit SmallAttention(int32_t p) : q(ramp(hd * nh, 0.05f, -0.5f)), k(ramp(hd * n_ctx, 0.09f, -1.0f)),
                                       v(ramp(hd * n_ctx, 0.3f, -3.0f)), out(hd * nh), pos{p} {
    for (size_t i = 0; i < k.size(); ++i) k[i] *= 1.0f + 0.01f * static_cast<float>(i % 13);  // columns differ
  }
  strata_op op() {
    strata_op o = make_op(STRATA_OP_ATTENTION);
    o.src[0] = tensor_f32(q.data(), {hd, nh, 1});
    o.src[1] = make_tensor(k.data(), GgmlType::F32, {hd, n_ctx});
    o.src[2] = make_tensor(v.data(), GgmlType::F32, {hd, n_ctx});
    o.src[3] = tensor_i32(pos.data(), {1});
    o.dst = tensor_f32(out.data(), {hd * nh, 1});
    o.i[0] = static_cast<int32_t>(nh);
    o.i[1] = 1;
    o.f[0] = 0.25f;
    return o;
  }
  // By hand in double: softmax over columns [first, last] (plus a sink logit when given) of the scaled scores.
  std::vector<double> by_hand(int64_t first, int64_t last, const float* sinks) const {
    std::vector<double> r(hd * nh);
    for (int64_t h = 0; h < nh; ++h) {
      std::vector<double> s;
      for (int64_t j = first; j <= last; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[h * hd + d]) * static_cast<double>(k[j * hd + d]);
        s.push_back(0.25 * dot);
      }
      double m = *std::max_element(s.begin(), s.end());
      if (sinks != nullptr) m = std::max(m, static_cast<double>(sinks[h]));
      double z = sinks != nullptr ? std::exp(static_cast<double>(sinks[h]) - m) : 0.0;
      for (double x : s) z += std::exp(x - m);
      for (int64_t d = 0; d < hd; ++d) {
        double acc = 0;
        for (int64_t j = first; j <= last; ++j) acc += std::exp(s[j - first] - m) * static_cast<double>(v[j * hd + d]);
        r[h * hd + d] = acc / z;
      }
    }
    return r;
  }
};

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(static_cast<double>(got[i]), want[i], tol) << what << " " << i;
}

TEST(ReferenceOps, AttentionWindowSeesOnlyItsColumns) {
  SmallAttention a(9);
  strata_op op = a.op();
  op.i[2] = 4;  // columns 6..9
  run_reference(op);
  expect_near_all(a.out, a.by_hand(6, 9, nullptr), 1e-5, "window 4 at position 9");
  const std::vector<float> windowed = a.out;
  // The same four columns as a cache of their own, seen whole from position 3: the same bytes.
  SmallAttention b(3);
  b.k.assign(a.k.begin() + 6 * a.hd, a.k.begin() + 10 * a.hd);
  b.v.assign(a.v.begin() + 6 * a.hd, a.v.begin() + 10 * a.hd);
  strata_op whole = b.op();
  whole.src[1] = make_tensor(b.k.data(), GgmlType::F32, {b.hd, 4});
  whole.src[2] = make_tensor(b.v.data(), GgmlType::F32, {b.hd, 4});
  run_reference(whole);
  EXPECT_EQ(0, std::memcmp(windowed.data(), b.out.data(), windowed.size() * sizeof(float)));
  // A window longer than the position is no window, bit for bit; and the window differs from none.
  op.i[2] = 50;
  run_reference(op);
  const std::vector<float> long_window = a.out;
  op.i[2] = 0;
  run_reference(op);
  EXPECT_EQ(0, std::memcmp(long_window.data(), a.out.data(), a.out.size() * sizeof(float)));
  EXPECT_NE(0, std::memcmp(windowed.data(), a.out.data(), a.out.size() * sizeof(float)));
  op.i[2] = -1;
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, AttentionSinksJoinTheDenominator) {
  SmallAttention a(7);
  strata_op op = a.op();
  const std::vector<float> sinks = {0.7f, 3.5f};
  op.src4 = tensor_f32(sinks.data(), {2});
  run_reference(op);
  expect_near_all(a.out, a.by_hand(0, 7, sinks.data()), 1e-5, "sinks");
  // With a window too: the sink joins the window's columns.
  op.i[2] = 3;
  run_reference(op);
  expect_near_all(a.out, a.by_hand(5, 7, sinks.data()), 1e-5, "sinks and window 3");
  op.i[2] = 0;
  // A sink of -1e30 weighs nothing: no sink, bit for bit; so does a src4 past the op's struct_size.
  strata_op plain = a.op();
  run_reference(plain);
  const std::vector<float> none = a.out;
  const std::vector<float> tiny = {-1e30f, -1e30f};
  op.src4 = tensor_f32(tiny.data(), {2});
  run_reference(op);
  EXPECT_EQ(0, std::memcmp(none.data(), a.out.data(), none.size() * sizeof(float)));
  strata_op old_size = a.op();
  old_size.struct_size = static_cast<uint32_t>(offsetof(strata_op, src4));
  old_size.src4 = tensor_f32(sinks.data(), {2});
  run_reference(old_size);
  EXPECT_EQ(0, std::memcmp(none.data(), a.out.data(), none.size() * sizeof(float)));
  // One sink per query head, f32.
  const std::vector<float> three = {0, 0, 0};
  op.src4 = tensor_f32(three.data(), {3});
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, RopeYarnByHandAndWithoutExtension) {
  // One neox head of 8 values, n_rot 8, base 10000, pos 7: the ramp over pairs 0..3 with lo 1, hi 3 gives
  // mix {1, 1, 0.5, 0}, so pair p turns by pos * inv_p * (0.25 * (1 - mix) + mix); sin and cos times 1.5.
  const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 3.0f};
  const std::vector<int32_t> pos = {7};
  std::vector<float> dst(8);
  strata_op op = make_op(STRATA_OP_ROPE);
  op.src[0] = tensor_f32(x.data(), {8, 1, 1});
  op.src[1] = tensor_i32(pos.data(), {1});
  op.dst = tensor_f32(dst.data(), {8, 1, 1});
  op.i[0] = 2;
  op.i[1] = 8;
  op.f[0] = 10000.0f;
  op.f[1] = 0.25f;
  op.f[2] = 1.0f;
  op.f[3] = 1.5f;
  op.f[4] = 1.0f;
  op.f[5] = 3.0f;
  run_reference(op);
  const double mix[4] = {1, 1, 0.5, 0};
  for (int p = 0; p < 4; ++p) {
    const double th = 7.0 * std::pow(10000.0, -2.0 * p / 8) * (0.25 * (1 - mix[p]) + mix[p]);
    const double a = static_cast<double>(x[p]), b = static_cast<double>(x[p + 4]);
    EXPECT_NEAR(static_cast<double>(dst[p]), 1.5 * (a * std::cos(th) - b * std::sin(th)), 1e-5) << p;
    EXPECT_NEAR(static_cast<double>(dst[p + 4]), 1.5 * (a * std::sin(th) + b * std::cos(th)), 1e-5) << p;
  }
  // ext_factor 0 is the plain rope bit for bit, whatever the correction range; attn_factor 2 doubles every
  // rotated value exactly (a power of two) and leaves the rest.
  strata_op plain = op;
  plain.f[2] = plain.f[3] = plain.f[4] = plain.f[5] = 0.0f;
  const std::vector<float> x10 = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 3.0f, 9.0f, -9.0f};
  const std::vector<int32_t> far = {3001};
  for (strata_op* o : {&op, &plain}) {
    o->src[0] = tensor_f32(x10.data(), {10, 1, 1});
    o->src[1] = tensor_i32(far.data(), {1});
  }
  std::vector<float> want(10), got(10);
  plain.dst = tensor_f32(want.data(), {10, 1, 1});
  run_reference(plain);
  op.dst = tensor_f32(got.data(), {10, 1, 1});
  op.f[2] = 0.0f;
  op.f[3] = 0.0f;
  run_reference(op);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
  op.f[3] = 2.0f;
  run_reference(op);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(fmt::f32_bits(got[i]), fmt::f32_bits(2.0f * want[i])) << i;
  EXPECT_EQ(got[8], 9.0f);
  EXPECT_EQ(got[9], -9.0f);
}

TEST(ReferenceOps, RouterGatingTwoSoftmaxesTheChosenLogits) {
  // Experts 1 and 5 tie at 2.0, 7 and 11 at 1.0 across the choice's edge: ties go to the lower id.
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 3.0f, 0.5f, 2.0f, -2.0f, 1.0f, 0.0f, -3.0f, -0.5f, 1.0f};
  std::vector<int32_t> ids(4);
  std::vector<float> w(4);
  strata_op op = make_op(STRATA_OP_ROUTER);
  op.src[0] = tensor_f32(logits.data(), {12, 1});
  op.dst = tensor_i32(ids.data(), {4, 1});
  op.src[2] = tensor_f32(w.data(), {4, 1});
  op.i[0] = 4;
  op.i[1] = 2;
  op.f[0] = 1.0f;
  run_reference(op);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 1, 5, 7}));
  const double z = std::exp(3.0) + 2 * std::exp(2.0) + std::exp(1.0);
  const double want[4] = {std::exp(3.0) / z, std::exp(2.0) / z, std::exp(2.0) / z, std::exp(1.0) / z};
  double sum = 0;
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(static_cast<double>(w[j]), want[j], 1e-7) << j;
    sum += static_cast<double>(w[j]);
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  // Normalising changes nothing beyond rounding; the factor scales.
  op.i[2] = 1;
  op.f[0] = 2.0f;
  run_reference(op);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(static_cast<double>(w[j]), 2 * want[j], 2e-7) << j;
  // A selection bias picks expert 0 first; the weights are still the softmax over the chosen logits.
  const std::vector<float> bias = {5.0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  op.src[1] = tensor_f32(bias.data(), {12});
  op.i[2] = 0;
  op.f[0] = 1.0f;
  run_reference(op);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 3, 1, 5}));
  const double zb = std::exp(static_cast<double>(0.1f)) + std::exp(3.0) + 2 * std::exp(2.0);
  EXPECT_NEAR(static_cast<double>(w[0]), std::exp(static_cast<double>(0.1f)) / zb, 1e-7);
  EXPECT_NEAR(static_cast<double>(w[1]), std::exp(3.0) / zb, 1e-7);
  op.i[1] = 3;
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, SwigluOaiClampsAndPropagatesNan) {
  const float alpha = 1.702f, limit = 7.0f;
  const auto by_hand = [&](double g, double u) {
    const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
    return gc / (1 + std::exp(-static_cast<double>(alpha) * gc)) * (uc + 1);
  };
  for (const auto& [g, u] : std::vector<std::pair<float, float>>{{0.5f, -0.25f}, {-3.0f, 2.0f}, {6.5f, -6.5f},
                                                                   {-10.0f, 3.0f}, {12.0f, 30.0f}, {9.0f, -40.0f}}) {
    const double want = by_hand(static_cast<double>(g), static_cast<double>(u));
    EXPECT_NEAR(static_cast<double>(fmt::swiglu_oai_c(g, u, alpha, limit)), want, 1e-6 * std::max(1.0, std::fabs(want)))
        << g << ", " << u;
  }
  // Past the limit the clamped value itself, bit for bit (g only from above).
  EXPECT_EQ(fmt::f32_bits(fmt::swiglu_oai_c(12.0f, 1.0f, alpha, limit)), fmt::f32_bits(fmt::swiglu_oai_c(7.0f, 1.0f, alpha, limit)));
  EXPECT_EQ(fmt::f32_bits(fmt::swiglu_oai_c(2.0f, 30.0f, alpha, limit)), fmt::f32_bits(fmt::swiglu_oai_c(2.0f, 7.0f, alpha, limit)));
  EXPECT_EQ(fmt::f32_bits(fmt::swiglu_oai_c(2.0f, -30.0f, alpha, limit)), fmt::f32_bits(fmt::swiglu_oai_c(2.0f, -7.0f, alpha, limit)));
  EXPECT_NE(fmt::f32_bits(fmt::swiglu_oai_c(-12.0f, 1.0f, alpha, limit)), fmt::f32_bits(fmt::swiglu_oai_c(-7.0f, 1.0f, alpha, limit)));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(fmt::swiglu_oai_c(nan, 1.0f, alpha, limit)));
  EXPECT_TRUE(std::isnan(fmt::swiglu_oai_c(1.0f, nan, alpha, limit)));
  EXPECT_TRUE(std::isnan(fmt::swiglu_oai_c(nan, nan, alpha, limit)));
}

// A MOE op over experts 0 and 2 of `ex` for tokens (1, 0) and 0, under `form`; returns the rows.
std::vector<float> moe_rows(const Experts& ex, int64_t n_embd, int64_t n_ff, const std::vector<float>& x,
                            const float* route, const strata_expert_form* form) {
  const uint32_t expert_ids[] = {0, 2};
  const strata_expert_weights weights[] = {ex.weights[0], ex.weights[2]};
  const uint32_t offsets[] = {0, 2, 3};
  const uint32_t token_index[] = {1, 0, 0};
  std::vector<float> rows(n_embd * 3), dst(n_embd * 2);
  strata_moe_op m{static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 2, 2, expert_ids, weights,
                  offsets, token_index, route, x.data(), rows.data(), form};
  strata_op op = make_op(STRATA_OP_MOE);
  op.dst = tensor_f32(dst.data(), {n_embd, 2});
  op.extra = &m;
  run_reference(op);
  return rows;
}

TEST(ReferenceOps, ExpertFormWithoutEffectIsNoForm) {
  const int64_t n_embd = 64, n_ff = 32;
  const Experts ex = make_experts(3, n_embd, n_ff);
  const std::vector<float> x = ramp(n_embd * 2, 0.15f, -1.5f);
  const float ones[] = {1.0f, 1.0f, 1.0f};
  const std::vector<float> plain = moe_rows(ex, n_embd, n_ff, x, ones, nullptr);
  // SwiGLU with zero biases, or with none: no form, bit for bit.
  const std::vector<float> zeros_ff(n_ff * 3, 0.0f), zeros_embd(n_embd * 3, 0.0f);
  const strata_expert_form zero{STRATA_EXPERT_SWIGLU, 0, 0, 0, zeros_ff.data(), zeros_ff.data(), zeros_embd.data()};
  const strata_expert_form empty{STRATA_EXPERT_SWIGLU, 1.702f, 7.0f, 0, nullptr, nullptr, nullptr};
  for (const strata_expert_form* f : {&zero, &empty}) {
    const std::vector<float> rows = moe_rows(ex, n_embd, n_ff, x, ones, f);
    EXPECT_EQ(0, std::memcmp(plain.data(), rows.data(), plain.size() * sizeof(float)));
  }
  // A down bias alone, with route weight 1: each row is the plain row plus its expert's bias (float addition).
  std::vector<float> down(n_embd * 3);
  for (size_t i = 0; i < down.size(); ++i) down[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  const strata_expert_form down_only{STRATA_EXPERT_SWIGLU, 0, 0, 0, nullptr, nullptr, down.data()};
  const std::vector<float> biased = moe_rows(ex, n_embd, n_ff, x, ones, &down_only);
  const uint32_t pair_expert[] = {0, 0, 2};
  for (int p = 0; p < 3; ++p) {
    for (int64_t d = 0; d < n_embd; ++d) {
      const float want = plain[p * n_embd + d] + down[pair_expert[p] * n_embd + d];
      ASSERT_EQ(fmt::f32_bits(want), fmt::f32_bits(biased[p * n_embd + d])) << "pair " << p << " value " << d;
    }
  }
  // Forms no backend computes are refused by name.
  const strata_expert_form unknown{5, 1.702f, 7.0f, 0, nullptr, nullptr, nullptr};
  const strata_expert_form no_limit{STRATA_EXPERT_SWIGLU_OAI, 1.702f, 0.0f, 0, nullptr, nullptr, nullptr};
  for (const strata_expert_form* f : {&unknown, &no_limit}) {
    try {
      moe_rows(ex, n_embd, n_ff, x, ones, f);
      ADD_FAILURE() << "a bad form was accepted";
    } catch (const strata::Error& e) {
      EXPECT_NE(std::string(e.what()).find("expert form"), std::string::npos) << e.what();
    }
  }
}

// F32 experts (float dot products, no requantization) by hand in double: g and u with their biases, gpt-oss's
// clamped activation, the down product with its bias, times the route weight. The biases push g past the limit
// and u past it on both sides, so every clamp is taken.
TEST(ReferenceOps, ExpertFormSwigluOaiByHandOverFloatExperts) {
  const int64_t n_embd = 16, n_ff = 8;
  const std::vector<float> gate = ramp(n_ff * n_embd, 0.04f, -0.4f), up = ramp(n_ff * n_embd, 0.05f, -0.5f);
  const std::vector<float> down = ramp(n_embd * n_ff, 0.03f, -0.3f), x = ramp(n_embd, 0.2f, -2.0f);
  const std::vector<float> bg = {9, -2, 0.5f, 11, -9, 3, 0, 6.5f}, bu = {-12, 10, 0, 1, 8, -8, 0.5f, -1};
  std::vector<float> bd(n_embd);
  for (int64_t d = 0; d < n_embd; ++d) bd[d] = 0.1f * static_cast<float>(d) - 0.7f;
  const auto f32 = static_cast<uint32_t>(GgmlType::F32);
  const strata_expert_weights w{gate.data(), up.data(), down.data(), f32, f32, f32, 0};
  const strata_expert_form form{STRATA_EXPERT_SWIGLU_OAI, 1.702f, 7.0f, 0, bg.data(), bu.data(), bd.data()};
  const uint32_t id = 0, offsets[] = {0, 1}, token = 0;
  const float route = 0.5f;
  std::vector<float> rows(n_embd), dst(n_embd);
  const strata_moe_op m{static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 1, 1, &id, &w, offsets, &token,
                        &route, x.data(), rows.data(), &form};
  strata_op op = make_op(STRATA_OP_MOE);
  op.dst = tensor_f32(dst.data(), {n_embd, 1});
  op.extra = &m;
  run_reference(op);
  std::vector<double> h(n_ff);
  int clamped_g = 0, clamped_u_hi = 0, clamped_u_lo = 0;
  for (int64_t r = 0; r < n_ff; ++r) {
    double g = static_cast<double>(bg[r]), u = static_cast<double>(bu[r]);
    for (int64_t i = 0; i < n_embd; ++i) {
      g += static_cast<double>(gate[r * n_embd + i]) * static_cast<double>(x[i]);
      u += static_cast<double>(up[r * n_embd + i]) * static_cast<double>(x[i]);
    }
    clamped_g += g > 7;
    clamped_u_hi += u > 7;
    clamped_u_lo += u < -7;
    const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
    h[r] = gc / (1 + std::exp(-1.702 * gc)) * (uc + 1);
  }
  ASSERT_GT(clamped_g, 0);
  ASSERT_GT(clamped_u_hi, 0);
  ASSERT_GT(clamped_u_lo, 0);
  for (int64_t d = 0; d < n_embd; ++d) {
    double y = static_cast<double>(bd[d]);
    for (int64_t r = 0; r < n_ff; ++r) y += static_cast<double>(down[d * n_ff + r]) * h[r];
    EXPECT_NEAR(static_cast<double>(rows[d]), 0.5 * y, 1e-4 * std::max(1.0, std::fabs(y))) << d;
    EXPECT_EQ(dst[d], rows[d]) << d;
  }
}

}  // namespace

// ---- backend 1.6 (deepseek2): stacks of matrices, value heads of their own size, expert groups -----------------

namespace {

// MUL_MAT over a stack of 3 matrices [64, 5] (Q8_0, F16, F32), src1 and dst strided views (columns 8 and 4 floats
// past their rows): each plane equals a plain MUL_MAT of that matrix over a dense copy of its columns, bit for bit,
// and the gaps of dst are not written.
TEST(ReferenceOps, MulMatStackIsOnePlainProductPerMatrix) {
  constexpr int64_t n_in = 64, n_out = 5, stack = 3, n_tok = 2, sx = n_in + 8, sd = n_out + 4;
  const std::vector<float> wf = ramp(static_cast<size_t>(n_in * n_out * stack), 0.013f, -0.15f);
  const std::vector<float> x = ramp(static_cast<size_t>(sx * stack * n_tok), 0.11f, -1.2f);
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::F16, GgmlType::F32}) {
    const uint64_t row = fmt::row_bytes(type, n_in);
    std::vector<unsigned char> w(row * n_out * stack);
    for (int64_t r = 0; r < n_out * stack; ++r) {
      const float* src = wf.data() + r * n_in;
      unsigned char* out = w.data() + r * row;
      if (type == GgmlType::Q8_0) {
        fmt::quantize_row(type, src, out, n_in);
      } else if (type == GgmlType::F16) {
        for (int64_t i = 0; i < n_in; ++i) {
          const uint16_t h = fmt::fp32_to_fp16(src[i]);
          std::memcpy(out + 2 * i, &h, 2);
        }
      } else {
        std::memcpy(out, src, row);
      }
    }
    std::vector<float> dst(static_cast<size_t>(sd * stack * n_tok), -7.0f);
    strata_op op = make_op(STRATA_OP_MUL_MAT);
    op.src[0] = make_tensor(w.data(), type, {n_in, n_out, stack});
    op.src[1] = tensor_f32(x.data(), {n_in, stack, n_tok});
    op.src[1].nb[1] = sx * sizeof(float);
    op.src[1].nb[2] = sx * stack * sizeof(float);
    op.dst = tensor_f32(dst.data(), {n_out, stack, n_tok});
    op.dst.nb[1] = sd * sizeof(float);
    op.dst.nb[2] = sd * stack * sizeof(float);
    run_reference(op);
    for (int64_t b = 0; b < stack; ++b) {
      std::vector<float> cols(static_cast<size_t>(n_in * n_tok)), plain(static_cast<size_t>(n_out * n_tok));
      for (int64_t t = 0; t < n_tok; ++t) {
        std::copy_n(x.begin() + (t * stack + b) * sx, n_in, cols.begin() + t * n_in);
      }
      strata_op one = make_op(STRATA_OP_MUL_MAT);
      one.src[0] = make_tensor(w.data() + b * row * n_out, type, {n_in, n_out});
      one.src[1] = tensor_f32(cols.data(), {n_in, n_tok});
      one.dst = tensor_f32(plain.data(), {n_out, n_tok});
      run_reference(one);
      for (int64_t t = 0; t < n_tok; ++t) {
        const float* got = dst.data() + (t * stack + b) * sd;
        EXPECT_EQ(std::memcmp(got, plain.data() + t * n_out, n_out * sizeof(float)), 0)
            << fmt::traits(type).name << " matrix " << b << " token " << t;
        for (int64_t i = n_out; i < sd; ++i) EXPECT_EQ(got[i], -7.0f) << "a gap of dst was written";
      }
    }
  }
  // A src1 that is not one column per matrix is refused.
  std::vector<float> w(n_in * n_out * stack), x2(n_in * 2), d2(n_out * 2);
  strata_op bad = make_op(STRATA_OP_MUL_MAT);
  bad.src[0] = make_tensor(w.data(), GgmlType::F32, {n_in, n_out, stack});
  bad.src[1] = tensor_f32(x2.data(), {n_in, 2});
  bad.dst = tensor_f32(d2.data(), {n_out, 2});
  EXPECT_THROW(run_reference(bad), strata::Error);
}

// deepseek2's latent attention: one kv head of 80 (latent 64 + rope 16), four query heads, the values the cache's
// first 64 columns as a view (rows the keys' stride apart). It equals the same attention with a separate value
// cache holding those 64 columns, bit for bit, and dst is [64 * n_head, n_tok].
TEST(ReferenceOps, AttentionWithValuesAViewOfTheKeysEqualsASeparateValueCache) {
  constexpr int64_t dk = 80, dv = 64, nh = 4, n_ctx = 9, n_tok = 2;
  const std::vector<float> q = ramp(dk * nh * n_tok, 0.04f, -0.4f);
  std::vector<float> kf = ramp(dk * n_ctx, 0.09f, -1.0f);
  for (size_t i = 0; i < kf.size(); ++i) kf[i] *= 1.0f + 0.01f * static_cast<float>(i % 13);  // columns differ
  const std::vector<uint16_t> keys = f16_cache(kf);
  std::vector<uint16_t> values(dv * n_ctx);
  for (int64_t j = 0; j < n_ctx; ++j) std::copy_n(keys.begin() + j * dk, dv, values.begin() + j * dv);
  const std::vector<int32_t> pos = {4, 8};
  std::vector<float> viewed(dv * nh * n_tok), separate(dv * nh * n_tok);
  strata_op op = make_op(STRATA_OP_ATTENTION);
  op.src[0] = tensor_f32(q.data(), {dk, nh, n_tok});
  op.src[1] = make_tensor(keys.data(), GgmlType::F16, {dk, n_ctx});
  op.src[2] = make_tensor(keys.data(), GgmlType::F16, {dv, n_ctx});
  op.src[2].nb[1] = op.src[1].nb[1];
  op.src[3] = tensor_i32(pos.data(), {n_tok});
  op.dst = tensor_f32(viewed.data(), {dv * nh, n_tok});
  op.i[0] = static_cast<int32_t>(nh);
  op.i[1] = 1;
  op.f[0] = 0.1f;
  run_reference(op);
  op.src[2] = make_tensor(values.data(), GgmlType::F16, {dv, n_ctx});
  op.dst = tensor_f32(separate.data(), {dv * nh, n_tok});
  run_reference(op);
  EXPECT_EQ(std::memcmp(viewed.data(), separate.data(), viewed.size() * sizeof(float)), 0);
  // A dst of the key heads' width is refused.
  std::vector<float> wide(dk * nh * n_tok);
  op.dst = tensor_f32(wide.data(), {dk * nh, n_tok});
  EXPECT_THROW(run_reference(op), strata::Error);
}

// Expert groups (DeepSeek-V3) by hand, with gating 2 so that the scores are the logits themselves: 8 experts in 4
// groups of 2. Group scores (the two largest summed): g0 {3, -2} 1, g1 {1, 1} 2, g2 {2.5, -1} 1.5, g3 {1.5, 0.5} 2.
TEST(ReferenceOps, RouterGroupsKeepTheBestGroupsByTheirTwoLargest) {
  const std::vector<float> logits = {3.0f, -2.0f, 1.0f, 1.0f, 2.5f, -1.0f, 1.5f, 0.5f};
  std::vector<int32_t> ids(3);
  std::vector<float> w(3);
  strata_op op = make_op(STRATA_OP_ROUTER);
  op.src[0] = tensor_f32(logits.data(), {8, 1});
  op.dst = tensor_i32(ids.data(), {3, 1});
  op.src[2] = tensor_f32(w.data(), {3, 1});
  op.i[0] = 3;
  op.i[1] = 2;
  op.i[3] = 4;
  op.i[4] = 2;
  op.f[0] = 1.0f;
  // Keep 2: g1 and g3 (2 each); experts 0 and 4, the two largest logits, are out; 2 and 3 tie (the lower first).
  run_reference(op);
  EXPECT_EQ(ids, (std::vector<int32_t>{6, 2, 3}));
  const double z = std::exp(0.0) + 2 * std::exp(-0.5);
  EXPECT_NEAR(static_cast<double>(w[0]), 1.0 / z, 1e-7);
  EXPECT_NEAR(static_cast<double>(w[1]), std::exp(-0.5) / z, 1e-7);
  // Keep 1: g1 and g3 tie at 2, the lower group wins.
  op.i[0] = 2;
  op.i[4] = 1;
  op.dst = tensor_i32(ids.data(), {2, 1});
  op.src[2] = tensor_f32(w.data(), {2, 1});
  run_reference(op);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 3);
  // A bias of 1 on expert 7 makes g3 score 1.5 + 1.5 = 3: kept alone; 6 and 7 tie at 1.5 (the lower first), and the
  // weights are the softmax over their logits (the bias only selects).
  const std::vector<float> bias = {0, 0, 0, 0, 0, 0, 0, 1.0f};
  op.src[1] = tensor_f32(bias.data(), {8});
  run_reference(op);
  EXPECT_EQ(ids[0], 6);
  EXPECT_EQ(ids[1], 7);
  EXPECT_NEAR(static_cast<double>(w[0]), 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  // Groups that do not divide the experts, and kept groups holding fewer than k experts, are refused.
  op.i[3] = 3;
  EXPECT_THROW(run_reference(op), strata::Error);
  op.i[3] = 4;
  op.i[0] = 3;
  op.dst = tensor_i32(ids.data(), {3, 1});
  op.src[2] = tensor_f32(w.data(), {3, 1});
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, LayerNormByHand) {
  // [1, 2, 3, 4]: mean 2.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so with eps 0 the row becomes
  // (-1.5, -0.5, 0.5, 1.5) / sqrt(1.25) = (-1.3416407865, -0.4472135955, 0.4472135955, 1.3416407865).
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {1, 2, -1, 0.5f}, b = {0, 1, 0.5f, -2};
  const double plain[4] = {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738};
  std::vector<float> dst(4);
  strata_op op = make_op(STRATA_OP_LAYER_NORM);
  op.src[0] = tensor_f32(x.data(), {4, 1});
  op.dst = tensor_f32(dst.data(), {4, 1});
  run_reference(op);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(static_cast<double>(dst[i]), plain[i], 1e-7) << i;
  // Weight, then bias: y * w + b; the bias alone.
  op.src[1] = tensor_f32(w.data(), {4});
  op.src[2] = tensor_f32(b.data(), {4});
  run_reference(op);
  const double with_both[4] = {-1.3416407864998738, 0.1055728090000842, 0.0527864045000421, -1.3291796067500631};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(static_cast<double>(dst[i]), with_both[i], 1e-7) << i;
  op.src[1] = strata::no_tensor();
  run_reference(op);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(static_cast<double>(dst[i]), plain[i] + static_cast<double>(b[i]), 1e-7) << i;
  // eps 0.75: variance + eps = 2, in place (dst = src0), two rows each normalised alone.
  std::vector<float> rows = {1, 2, 3, 4, 10, 10, 10, 14};  // the second: mean 11, variance 3
  op.src[0] = op.dst = tensor_f32(rows.data(), {4, 2});
  op.src[2] = strata::no_tensor();
  op.f[0] = 0.75f;
  run_reference(op);
  EXPECT_NEAR(static_cast<double>(rows[0]), -1.0606601717798212, 1e-7);  // -1.5 / sqrt(2)
  EXPECT_NEAR(static_cast<double>(rows[3]), 1.0606601717798212, 1e-7);
  EXPECT_NEAR(static_cast<double>(rows[4]), -0.5163977794943222, 1e-7);  // -1 / sqrt(3 + 0.75)
  EXPECT_NEAR(static_cast<double>(rows[7]), 1.5491933384829668, 1e-7);  // 3 / sqrt(3.75)
  // A weight of another length, and a dst of another shape, are refused.
  op.src[1] = tensor_f32(w.data(), {3});
  EXPECT_THROW(run_reference(op), strata::Error);
  op.src[1] = strata::no_tensor();
  op.dst = tensor_f32(dst.data(), {4, 1});
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, GeluTanhFormAndF16Table) {
  // gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906..., gelu(-1) = gelu(1) - 1 = -0.1588080093...
  const std::vector<float> x = {1.0f, -1.0f, 0.0f, 10.0f, -10.0f, 9.99f, -9.99f, 0.50006f, 0.5f, 20.0f};
  std::vector<float> dst(x.size());
  strata_op op = make_op(STRATA_OP_GELU);
  op.src[0] = tensor_f32(x.data(), {static_cast<int64_t>(x.size())});
  op.dst = tensor_f32(dst.data(), {static_cast<int64_t>(x.size())});
  run_reference(op);
  EXPECT_EQ(dst[0], static_cast<float>(0.8411919906082768));
  EXPECT_EQ(dst[1], static_cast<float>(-0.1588080093917233));
  EXPECT_EQ(dst[2], 0.0f);
  EXPECT_EQ(dst[3], 10.0f);  // tanh is 1 in double
  EXPECT_EQ(dst[8], static_cast<float>(0.3457140098251439));
  // ggml's table (i[0] = 1): f16(gelu(f16(x))) inside (-10, 10); 0 at or below -10; x itself at or above 10.
  op.i[0] = 1;
  run_reference(op);
  EXPECT_EQ(dst[0], 0.84130859375f);  // 1723 / 2048, the half nearest 0.84119199
  EXPECT_EQ(dst[3], 10.0f);
  EXPECT_EQ(dst[4], 0.0f);
  EXPECT_EQ(dst[5], 9.9921875f);  // 9.99 is the half 9.9921875 (1279 / 128), and gelu of it rounds back to it
  EXPECT_EQ(dst[6], 0.0f);        // gelu(-9.9921875) is far below the smallest half
  EXPECT_EQ(dst[7], 0.345703125f);  // 0.50006 is the half 0.5; gelu(0.5) = 0.345714 -> 1416 / 4096
  EXPECT_EQ(dst[8], 0.345703125f);
  EXPECT_EQ(dst[9], 20.0f);
  op.i[0] = 2;
  EXPECT_THROW(run_reference(op), strata::Error);
}

TEST(ReferenceOps, RopeMode24TurnsRowPairsThenColumnPairs) {
  // Two tokens of one head of 8, n_rot 8, i[2] = i[3] = 2, base 10000: neox pairs (k, k + 4); pairs 0 and 1 turn by the
  // row (component 1) at 10000^(-2k/4) = {1, 0.01}, pairs 2 and 3 by the column (component 2) at the same two
  // frequencies (index k - 2). Token 0 sits at row 1, column 0; token 1 at row 0, column 3. Components 0 and 3 (t, e),
  // freq_scale and attn_factor are ignored.
  const std::vector<float> head = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 3.0f};
  std::vector<float> x = head;
  x.insert(x.end(), head.begin(), head.end());
  const std::vector<int32_t> pos = {7, 9, 1, 0, 0, 3, 5, 6};  // [2, 4] component-major: t, row, column, e
  std::vector<float> dst(16);
  strata_op op = make_op(STRATA_OP_ROPE);
  op.src[0] = tensor_f32(x.data(), {8, 1, 2});
  op.src[1] = tensor_i32(pos.data(), {2, 4});
  op.dst = tensor_f32(dst.data(), {8, 1, 2});
  op.i[0] = 24;
  op.i[1] = 8;
  op.i[2] = 2;
  op.i[3] = 2;
  op.f[0] = 10000.0f;
  op.f[1] = 0.5f;
  op.f[3] = 2.0f;
  run_reference(op);
  const double theta[2][4] = {{1.0, 0.01, 0.0, 0.0}, {0.0, 0.0, 3.0, 0.03}};
  for (int t = 0; t < 2; ++t) {
    for (int k = 0; k < 4; ++k) {
      const double a = static_cast<double>(head[k]), b = static_cast<double>(head[k + 4]);
      const double c = std::cos(theta[t][k]), s = std::sin(theta[t][k]);
      const float got_a = dst[8 * t + k], got_b = dst[8 * t + k + 4];
      if (theta[t][k] == 0.0) {
        EXPECT_EQ(got_a, head[k]) << t << " " << k << ": position 0 is the identity";
        EXPECT_EQ(got_b, head[k + 4]) << t << " " << k;
      } else {
        EXPECT_NEAR(static_cast<double>(got_a), a * c - b * s, 1e-6) << t << " " << k;
        EXPECT_NEAR(static_cast<double>(got_b), a * s + b * c, 1e-6) << t << " " << k;
      }
    }
  }
  // The sections must cover n_rot / 2, and the positions must be [n_tok, 4].
  op.i[3] = 1;
  EXPECT_THROW(run_reference(op), strata::Error);
  op.i[3] = 2;
  op.src[1] = tensor_i32(pos.data(), {2});
  EXPECT_THROW(run_reference(op), strata::Error);
}

}  // namespace
