// gpt-oss's expert form on the plugin's code path (expert_form.cuh, canonical_math.cuh's swiglu_oai_c, act_quant.cuh's
// swiglu_block), compiled by nvcc with --fmad=false and run on the host: swiglu_oai_c equals format::swiglu_oai_c bit
// for bit over sweeps, the clamps' edges, NaN payloads and infinities; and one expert row composed of the kernels'
// pieces in their order (Q8_1 of x, gate and up dots + their biases, the activation block and its Q8_1, the down dot
// + its bias, times the route weight) equals format::canonical_expert_row with the form bound, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "act_quant.cuh"
#include "expert_form.cuh"
#include "strata/format/canonical.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/format/types.hpp"

namespace {

using strata::format::f32_bits;
using strata::format::f32_from_bits;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Values around every branch: the clamps' edges (+-limit and their neighbours), where exp_c saturates, zeros,
// infinities, NaNs with payloads and signs, and a sweep of bit patterns.
std::vector<float> probe_values(float limit) {
  std::vector<float> v;
  for (float e : {limit, -limit, 0.0f, 1.0f, -1.0f, 50.0f, -50.0f, 88.0f, -88.0f}) {
    for (int d = -8; d <= 8; ++d) v.push_back(f32_from_bits(f32_bits(e) + static_cast<uint32_t>(d)));
  }
  for (float s : {-0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), f32_from_bits(0xffc12345u),
                  f32_from_bits(0x7fa00001u), std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min()}) {
    v.push_back(s);
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 1000003) v.push_back(f32_from_bits(static_cast<uint32_t>(u)));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
  for (int i = 0; i < 20000; ++i) v.push_back(dist(rng));
  return v;
}

TEST(CudaExpertForm, SwigluOaiMatchesFormatLibraryBitForBit) {
  int64_t checked = 0;
  // gpt-oss's constants, then others (a limit below 1, a negative alpha) so that no branch is special to 7.
  const float params[][2] = {{1.702f, 7.0f}, {1.0f, 0.5f}, {-0.75f, 3.25f}, {0.0f, 100.0f}};
  for (const auto& pa : params) {
    const float alpha = pa[0], limit = pa[1];
    const std::vector<float> xs = probe_values(limit);
    std::mt19937 rng(9);
    std::uniform_int_distribution<size_t> pick(0, xs.size() - 1);
    for (float g : xs) {
      // Each g against a few u's: the edge values themselves and random picks.
      for (float u : {xs[pick(rng)], xs[pick(rng)], limit, -limit, g}) {
        const uint32_t want = f32_bits(strata::format::swiglu_oai_c(g, u, alpha, limit));
        ASSERT_EQ(f32_bits(strata::gpu::swiglu_oai_c(g, u, alpha, limit)), want)
            << std::hex << "g 0x" << f32_bits(g) << " u 0x" << f32_bits(u) << " alpha " << alpha << " limit "
            << limit;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

// NaN stays NaN through both clamps (fminf/fmaxf would have dropped it); infinities are clamped.
TEST(CudaExpertForm, SwigluOaiClampsPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(strata::gpu::swiglu_oai_c(nan, 1.0f, 1.702f, 7.0f)));
  EXPECT_TRUE(std::isnan(strata::gpu::swiglu_oai_c(1.0f, nan, 1.702f, 7.0f)));
  // g = +inf clamps to 7, u = -inf to -7: a finite result, the reference's.
  const float r = strata::gpu::swiglu_oai_c(kInf, -kInf, 1.702f, 7.0f);
  EXPECT_TRUE(std::isfinite(r));
  EXPECT_EQ(f32_bits(r), f32_bits(strata::format::swiglu_oai_c(kInf, -kInf, 1.702f, 7.0f)));
}

// swiglu_block (launch_swiglu's and the pipelines' step) with either activation: each value expert_act's, the
// padding past n zero.
TEST(CudaExpertForm, SwigluBlockTakesTheFormsActivation) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  float g[32], u[32];
  for (int i = 0; i < 32; ++i) g[i] = dist(rng), u[i] = dist(rng);
  g[3] = std::numeric_limits<float>::quiet_NaN();
  u[4] = kInf;
  const strata::gpu::ExpertAct plain{0, 0.0f, 0.0f}, oai{1, 1.702f, 7.0f};
  float h[32];
  strata::gpu::swiglu_block(g, u, 30, oai, h);
  for (int i = 0; i < 32; ++i) {
    const float want = i < 30 ? strata::format::swiglu_oai_c(g[i], u[i], 1.702f, 7.0f) : 0.0f;
    EXPECT_EQ(f32_bits(h[i]), f32_bits(want)) << "oai value " << i;
  }
  strata::gpu::swiglu_block(g, u, 32, plain, h);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(f32_bits(h[i]), f32_bits(strata::format::swiglu_c(g[i], u[i]))) << i;
}

// Q8_1 of n floats by the plugin's block quantizer (act_quant.cuh).
std::vector<strata::format::block_q8_1> quantize(const std::vector<float>& x) {
  std::vector<strata::format::block_q8_1> q(x.size() / 32);
  for (size_t b = 0; b < q.size(); ++b) {
    float blk[32];
    for (int i = 0; i < 32; ++i) blk[i] = x[32 * b + static_cast<size_t>(i)];
    uint32_t w[strata::gpu::kQ8Words];
    strata::gpu::quantize_block_q8_1(blk, w);
    static_assert(sizeof(strata::format::block_q8_1) == strata::gpu::kQ8Bytes, "one block_q8_1");
    std::memcpy(&q[b], w, sizeof w);
  }
  return q;
}

// Expert `expert` of a table with biases and SwiGLU-OAI, Q8_0 matrices: the kernels' steps against the reference.
TEST(CudaExpertForm, BiasesJoinWhereTheReferenceAddsThem) {
  using strata::format::GgmlType;
  constexpr int64_t n_embd = 64, n_ff = 96, n_expert = 3;
  constexpr uint32_t expert = 2;
  std::mt19937 rng(17);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const auto q8_0 = [&](int64_t rows, int64_t n) {
    std::vector<float> w(static_cast<size_t>(rows * n));
    for (float& v : w) v = dist(rng);
    std::vector<unsigned char> out(strata::format::row_bytes(GgmlType::Q8_0, static_cast<uint64_t>(n)) *
                                   static_cast<size_t>(rows));
    strata::format::quantize_row(GgmlType::Q8_0, w.data(), out.data(), rows * n);
    return out;
  };
  const std::vector<unsigned char> gate = q8_0(n_ff, n_embd), up = q8_0(n_ff, n_embd), down = q8_0(n_embd, n_ff);
  // Biases of every expert, large enough that both clamps engage on some rows.
  std::vector<float> bg(n_ff * n_expert), bu(n_ff * n_expert), bd(n_embd * n_expert);
  for (float& v : bg) v = 6.0f * dist(rng);
  for (float& v : bu) v = 6.0f * dist(rng);
  for (float& v : bd) v = dist(rng);
  std::vector<float> x(n_embd);
  for (float& v : x) v = dist(rng);
  const float weight = 0.37f;
  const strata_expert_form form{STRATA_EXPERT_SWIGLU_OAI, 1.702f, 7.0f, 0, bg.data(), bu.data(), bd.data()};

  strata::format::ExpertMatrices m{GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::Q8_0, gate.data(), up.data(),
                                   down.data(), n_embd, n_ff};
  strata::format::bind_expert_form(m, &form, expert);
  std::vector<float> want(n_embd);
  strata::format::canonical_expert_row(m, x.data(), weight, want.data());

  // The kernels' steps: the form as they take it (expert_form_of), biases by the expert's id.
  const strata::gpu::ExpertForm f = strata::gpu::expert_form_of(&form);
  const uint64_t in_row = strata::format::row_bytes(GgmlType::Q8_0, n_embd);
  const uint64_t ff_row = strata::format::row_bytes(GgmlType::Q8_0, n_ff);
  const auto xq = quantize(x);
  std::vector<float> gd(n_ff), ud(n_ff), g(n_ff), u(n_ff), h(n_ff);
  for (int64_t r = 0; r < n_ff; ++r) {
    const auto i = static_cast<size_t>(r);
    gd[i] = strata::format::canonical_dot(GgmlType::Q8_0, gate.data() + r * in_row, xq.data(), n_embd);
    ud[i] = strata::format::canonical_dot(GgmlType::Q8_0, up.data() + r * in_row, xq.data(), n_embd);
    // The pair and decode paths: the biases join the dots as they are written.
    g[i] = strata::gpu::add_bias(gd[i], f.bias.gate, expert, n_ff, r);
    u[i] = strata::gpu::add_bias(ud[i], f.bias.up, expert, n_ff, r);
  }
  for (int64_t b = 0; b < n_ff / 32; ++b) {
    float blk[32], tiled[32];
    strata::gpu::swiglu_block(g.data() + 32 * b, u.data() + 32 * b, 32, f.act, blk);
    // The tiled path: the dots as they are, the biases added by the activation's block (launch_swiglu's RowBiases).
    strata::gpu::swiglu_block(gd.data() + 32 * b, ud.data() + 32 * b, 32, f.act, tiled,
                              f.bias.gate + expert * n_ff + 32 * b, f.bias.up + expert * n_ff + 32 * b);
    for (int i = 0; i < 32; ++i) {
      ASSERT_EQ(f32_bits(tiled[i]), f32_bits(blk[i])) << "row " << 32 * b + i;
      h[static_cast<size_t>(32 * b + i)] = blk[i];
    }
  }
  const auto hq = quantize(h);
  for (int64_t r = 0; r < n_embd; ++r) {
    const float yd = strata::format::canonical_dot(GgmlType::Q8_0, down.data() + r * ff_row, hq.data(), n_ff);
    const float got = weight * strata::gpu::add_bias(yd, f.bias.down, expert, n_embd, r);
    ASSERT_EQ(f32_bits(got), f32_bits(want[static_cast<size_t>(r)])) << "row " << r;
  }
  // Without a form: no biases, plain SwiGLU.
  const strata::gpu::ExpertForm none = strata::gpu::expert_form_of(nullptr);
  EXPECT_EQ(none.act.oai, 0);
  EXPECT_EQ(none.bias.gate, nullptr);
  EXPECT_EQ(f32_bits(strata::gpu::add_bias(1.5f, none.bias.down, expert, n_embd, 0)), f32_bits(1.5f));
}

}  // namespace
