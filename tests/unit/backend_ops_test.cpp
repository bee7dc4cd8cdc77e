// The op-parity suite: every case of backend_ops_cases.cpp on every backend under test against the reference
// backend (memcmp for the canonical ops, NMSE with NaN/Inf parity for the others, guard bytes around outputs);
// "not supported" is a skip with its own message. Where the machine has cpu_avx2's AVX-512 path, every case also
// runs on both of its paths and must give the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <tuple>

#include "backend_ops_harness.hpp"
#include "strata/error.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"

namespace strata::test {
namespace {

std::vector<size_t> case_indices() {
  std::vector<size_t> v(all_cases().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

// Seeded per case, so a failure reproduces alone.
std::mt19937 rng_for(size_t case_index) { return std::mt19937(0x5eed0000u + static_cast<uint32_t>(case_index)); }

void expect_ran(const RunResult& r, const std::string& who) {
  ASSERT_TRUE(r.error.empty()) << who << " failed: " << r.error;
  for (const std::string& name : r.guard_damage) ADD_FAILURE() << who << " wrote outside " << name;
}

class BackendOps : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(BackendOps, MatchesReference) {
  const auto& [label, index] = GetParam();
  const BackendUnderTest* b = find_backend(label);
  ASSERT_NE(b, nullptr);
  const OpCase& c = *all_cases()[index];
  std::mt19937 rng = rng_for(index);
  Instance inst = c.build(rng);
  const RunResult got = run_on_backend(*b, inst);
  if (!got.supported) GTEST_SKIP() << label << " does not support " << c.vars();
  expect_ran(got, label);
  const RunResult want = run_on_reference(inst);
  expect_ran(want, "reference");
  bool by_case = false;
  for (size_t i = 0; i < inst.outputs.size(); ++i) {
    const Output o = output_for(inst.outputs[i], label);
    if (o.compare == Compare::ByCase) {
      by_case = true;
      continue;
    }
    const std::string diff = compare_output(o, want.out[i], got.out[i], c.max_nmse_for(label));
    EXPECT_TRUE(diff.empty()) << c.vars() << " on " << label << ": " << diff;
  }
  if (by_case) {
    ASSERT_TRUE(inst.float_check) << c.vars() << ": an output compares by the case, which has no float_check";
    const std::string diff = inst.float_check(want.out, got.out);
    EXPECT_TRUE(diff.empty()) << c.vars() << " on " << label << ": " << diff;
  }
}

INSTANTIATE_TEST_SUITE_P(Parity, BackendOps,
                         ::testing::Combine(::testing::ValuesIn(backend_labels()), ::testing::ValuesIn(case_indices())),
                         [](const ::testing::TestParamInfo<BackendOps::ParamType>& p) {
                           return test_name(std::get<0>(p.param)) + "_" +
                                  test_name(all_cases()[std::get<1>(p.param)]->vars());
                         });

// Case `index` on backends a and b: the same bytes in every output (`what` names the pair in messages).
void expect_same_bytes(const BackendUnderTest& a, const BackendUnderTest& b, size_t index, const std::string& what) {
  const OpCase& c = *all_cases()[index];
  std::mt19937 rng = rng_for(index);
  Instance inst = c.build(rng);
  const RunResult ra = run_on_backend(a, inst);
  const RunResult rb = run_on_backend(b, inst);
  ASSERT_EQ(ra.supported, rb.supported);
  if (!ra.supported) GTEST_SKIP() << a.label << " does not support " << c.vars();
  expect_ran(ra, a.label);
  expect_ran(rb, b.label);
  for (size_t i = 0; i < inst.outputs.size(); ++i) {
    Output exact = inst.outputs[i];
    exact.compare = Compare::Bytes;
    const std::string diff = compare_output(exact, rb.out[i], ra.out[i], 0.0);
    EXPECT_TRUE(diff.empty()) << c.vars() << ": " << what << ": " << diff;
  }
}

// cpu_avx2's two paths give the same bytes for every op.
class CpuPaths : public ::testing::TestWithParam<size_t> {};

TEST_P(CpuPaths, Avx512EqualsAvx2) {
  const BackendUnderTest* native = find_backend("cpu_avx2");
  const BackendUnderTest* forced = find_backend("cpu_avx2_force_avx2");
  if (native == nullptr || forced == nullptr) GTEST_SKIP() << "this CPU has only cpu_avx2's AVX2 path";
  expect_same_bytes(*native, *forced, GetParam(), "AVX-512 vs AVX2");
}

// Nor on how its workers split an op: one worker against all of them.
TEST_P(CpuPaths, OneWorkerEqualsAll) {
  const BackendUnderTest* all = find_backend("cpu_avx2");
  const BackendUnderTest* one = cpu_one_worker();
  if (all == nullptr || one == nullptr) GTEST_SKIP() << "no cpu_avx2 plugin";
  expect_same_bytes(*all, *one, GetParam(), "all workers vs one");
}

// Nor on whether its AVX-512 kernels gather (the grid entries of IQ1_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S)
// or take their gather-free forms; on the AVX2 path the option changes nothing, so only the AVX-512 path's cases
// of those types are checked.
TEST_P(CpuPaths, GatherFreeEqualsGathering) {
  const BackendUnderTest* gathering = cpu_gathering();
  const BackendUnderTest* gather_free = cpu_gather_free();
  if (gathering == nullptr || gather_free == nullptr) GTEST_SKIP() << "no cpu_avx2 plugin";
  if (gathering->instance->devices().at(0).arch.find("AVX-512") == std::string::npos) {
    GTEST_SKIP() << "this CPU has only cpu_avx2's AVX2 path";
  }
  const std::string vars = test_name(all_cases()[GetParam()]->vars()) + "_";  // "MUL_MAT_type_iq2_xs_n_in_..."
  bool gathers = false;
  for (const char* type : {"iq1_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s"}) {
    gathers = gathers || vars.find(std::string("_") + type + "_") != std::string::npos;
  }
  if (!gathers) GTEST_SKIP() << "no weights of a type whose kernel gathers";
  expect_same_bytes(*gathering, *gather_free, GetParam(), "gathering vs gather-free");
}

INSTANTIATE_TEST_SUITE_P(Parity, CpuPaths, ::testing::ValuesIn(case_indices()),
                         [](const ::testing::TestParamInfo<size_t>& p) {
                           return test_name(all_cases()[p.param]->vars());
                         });

// The float labels' ROUTER check cannot pass trivially: the reference's own outputs pass it, and a far expert in
// place of a chosen one, or weights 1e-3 off, fail it (checked on the CPU, with the reference's outputs).
TEST(BackendOpsSuite, RouterFloatCheckRejectsWrongOutputs) {
  size_t checked = 0;
  for (size_t i = 0; i < all_cases().size(); ++i) {
    std::mt19937 rng = rng_for(i);
    Instance inst = all_cases()[i]->build(rng);
    if (!inst.float_check) continue;
    const RunResult want = run_on_reference(inst);
    expect_ran(want, "reference");
    const std::string vars = all_cases()[i]->vars();
    EXPECT_EQ(inst.float_check(want.out, want.out), "") << vars;
    // The expert ranked last by the reference among those not chosen for token 0 replaces its first choice.
    std::vector<std::vector<unsigned char>> bad = want.out;
    std::vector<int32_t> ids(bad[0].size() / 4);
    std::memcpy(ids.data(), bad[0].data(), bad[0].size());
    const strata_op op = inst.bind({bad[0].data(), bad[1].data()});
    const auto k = static_cast<std::ptrdiff_t>(op.dst.ne[0]);  // ids are [k, n_tok]
    int32_t outsider = 0;
    while (std::find(ids.begin(), ids.begin() + k, outsider) != ids.begin() + k) ++outsider;
    ids[0] = outsider;
    std::memcpy(bad[0].data(), ids.data(), bad[0].size());
    EXPECT_NE(inst.float_check(want.out, bad), "") << vars << ": expert " << outsider << " in place of the first choice";
    bad = want.out;
    std::vector<float> w(bad[1].size() / 4);
    std::memcpy(w.data(), bad[1].data(), bad[1].size());
    for (float& v : w) v *= 1.001f;
    std::memcpy(bad[1].data(), w.data(), bad[1].size());
    EXPECT_NE(inst.float_check(want.out, bad), "") << vars << ": weights 1e-3 off";
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// Backend 1.6's expert forms through each host-memory backend's expert pool (the hybrid path's CPU rows): every MOE
// case with a form and rows gives the reference's rows as the case compares them (bytes; NaN at the same places
// where a bias is NaN).
TEST(BackendOpsSuite, ExpertPoolsComputeTheForms) {
  size_t checked = 0;
  for (const BackendUnderTest& b : backends_under_test()) {
    const auto* pool = b.instance->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
    if (pool == nullptr || b.backend->buffer_alloc != nullptr) continue;  // the cases' operands are host memory
    for (size_t i = 0; i < all_cases().size(); ++i) {
      const std::string vars = all_cases()[i]->vars();
      if (vars.rfind("MOE(", 0) != 0 || vars.find("form=") == std::string::npos || vars.find("rows=yes") == std::string::npos) {
        continue;
      }
      std::mt19937 rng = rng_for(i);
      Instance inst = all_cases()[i]->build(rng);
      const RunResult want = run_on_reference(inst);
      expect_ran(want, "reference");
      std::vector<float> rows(want.out[1].size() / sizeof(float), -1.0f), dst(want.out[0].size() / sizeof(float));
      const strata_op op = inst.bind({dst.data(), rows.data()});
      volatile uint32_t flag = 0;
      strata_status* st = pool->compute(b.ctx, static_cast<const strata_moe_op*>(op.extra), &flag, 5);
      ASSERT_EQ(st, nullptr) << b.label << " " << vars << ": " << take_status(st).second;
      EXPECT_EQ(flag, 5u);
      std::vector<unsigned char> got(want.out[1].size());
      std::memcpy(got.data(), rows.data(), got.size());
      const std::string diff = compare_output(inst.outputs[1], want.out[1], got, all_cases()[i]->max_nmse_for(b.label));
      EXPECT_TRUE(diff.empty()) << b.label << " pool: " << vars << ": " << diff;
      ++checked;
    }
  }
  if (find_backend("cpu_avx2") != nullptr) {
    EXPECT_GT(checked, 0u);
  }
}

// Backend 1.6's operands that no backend can compute: a negative window, sinks of the wrong length or type, a form
// with an unknown activation, without a positive limit or with a NaN alpha, gating 3. The reference throws, every
// backend's supports_op says no, and a host-memory backend's compute returns a status with a message (cpu_avx2's
// names the operand), as its expert pool does for the forms.
TEST(BackendOpsSuite, RefusesMalformedGptOssOperands) {
  const int64_t hd = 64, nh = 4, nkv = 2, n_ctx = 8;
  std::vector<float> q(hd * nh), out(hd * nh), sinks(nh + 1, 0.0f);
  std::vector<uint16_t> cache(hd * nkv * n_ctx, 0);
  const std::vector<int32_t> pos = {5}, sink_ints(nh, 0);
  strata_op att{};
  att.struct_size = sizeof att;
  att.kind = STRATA_OP_ATTENTION;
  att.src[0] = tensor_f32(q.data(), {hd, nh, 1});
  att.src[1] = att.src[2] = make_tensor(cache.data(), format::GgmlType::F16, {hd * nkv, n_ctx});
  att.src[3] = tensor_i32(pos.data(), {1});
  att.dst = tensor_f32(out.data(), {hd * nh, 1});
  att.i[0] = static_cast<int32_t>(nh);
  att.i[1] = static_cast<int32_t>(nkv);
  att.f[0] = 0.125f;
  std::vector<std::pair<std::string, strata_op>> bad;  // (what cpu_avx2's message names, op)
  strata_op negative_window = att;
  negative_window.i[2] = -3;
  bad.emplace_back("sliding window", negative_window);
  strata_op long_sinks = att;
  long_sinks.src4 = tensor_f32(sinks.data(), {nh + 1});
  bad.emplace_back("sinks", long_sinks);
  strata_op int_sinks = att;
  int_sinks.src4 = tensor_i32(sink_ints.data(), {nh});
  bad.emplace_back("sinks", int_sinks);

  // One F32 expert (id 0) for one token, under each bad form; the same forms on a one-expert table.
  const int64_t n_embd = 32, n_ff = 32;
  const std::vector<float> w(n_embd * n_ff, 0.01f), x(n_embd, 1.0f), bias(n_embd, 0.0f);
  std::vector<float> moe_out(n_embd), rows(n_embd);
  const auto f32 = static_cast<uint32_t>(format::GgmlType::F32);
  const strata_expert_weights expert{w.data(), w.data(), w.data(), f32, f32, f32, 0};
  const uint32_t id = 0, offsets[2] = {0, 1}, token = 0;
  const float route = 1.0f;
  const strata_expert_form forms[] = {
      {7, 1.702f, 7.0f, 0, nullptr, nullptr, bias.data()},
      {STRATA_EXPERT_SWIGLU_OAI, 1.702f, 0.0f, 0, nullptr, nullptr, nullptr},
      {STRATA_EXPERT_SWIGLU_OAI, std::numeric_limits<float>::quiet_NaN(), 7.0f, 0, nullptr, nullptr, nullptr}};
  std::deque<strata_moe_op> moe_ops;
  std::deque<strata_expert_table> tables;
  const std::vector<int32_t> ids = {0};
  const std::vector<float> weights = {1.0f};
  for (const strata_expert_form& f : forms) {
    strata_moe_op& m = moe_ops.emplace_back();
    m = {static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 1, 1, &id, &expert, offsets, &token, &route,
         x.data(), rows.data(), &f};
    strata_op moe{};
    moe.struct_size = sizeof moe;
    moe.kind = STRATA_OP_MOE;
    moe.dst = tensor_f32(moe_out.data(), {n_embd, 1});
    moe.extra = &m;
    bad.emplace_back("expert form", moe);
    strata_expert_table& t = tables.emplace_back();
    t = {static_cast<uint32_t>(n_embd), static_cast<uint32_t>(n_ff), 1, f32, f32, f32, &expert, &f};
    strata_op routed{};
    routed.struct_size = sizeof routed;
    routed.kind = STRATA_OP_MOE_ROUTED;
    routed.src[0] = tensor_f32(x.data(), {n_embd, 1});
    routed.src[1] = tensor_i32(ids.data(), {1, 1});
    routed.src[2] = tensor_f32(weights.data(), {1, 1});
    routed.dst = tensor_f32(moe_out.data(), {n_embd, 1});
    routed.extra = &t;
    bad.emplace_back("expert form", routed);
  }
  const std::vector<float> logits(12, 0.5f);
  std::vector<int32_t> chosen(4);
  std::vector<float> chosen_w(4);
  strata_op router{};
  router.struct_size = sizeof router;
  router.kind = STRATA_OP_ROUTER;
  router.src[0] = tensor_f32(logits.data(), {12, 1});
  router.src[2] = tensor_f32(chosen_w.data(), {4, 1});
  router.dst = tensor_i32(chosen.data(), {4, 1});
  router.i[0] = 4;
  router.i[1] = 3;
  bad.emplace_back("gating", router);

  for (const auto& [needle, op] : bad) {
    EXPECT_THROW(run_reference(op), Error) << needle << " (kind " << op.kind << ")";
    for (const BackendUnderTest& b : backends_under_test()) {
      EXPECT_EQ(b.backend->supports_op(b.ctx, 0, &op), 0u) << b.label << ": " << needle << " (kind " << op.kind << ")";
      if (b.backend->buffer_alloc != nullptr) continue;  // device memory: the host pointers above are not its
      const auto [code, message] = take_status(b.backend->compute(b.ctx, 0, &op, 1));
      EXPECT_NE(code, STRATA_OK) << b.label << ": " << needle;
      EXPECT_FALSE(message.empty()) << b.label << ": " << needle;
      if (b.label.rfind("cpu_avx2", 0) == 0) {
        EXPECT_NE(message.find(needle), std::string::npos) << b.label << ": " << message;
      }
    }
  }
  // The expert pools refuse the bad forms too.
  for (const BackendUnderTest& b : backends_under_test()) {
    const auto* pool = b.instance->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
    if (pool == nullptr || b.backend->buffer_alloc != nullptr) continue;
    for (const strata_moe_op& m : moe_ops) {
      const auto [code, message] = take_status(pool->compute(b.ctx, &m, nullptr, 0));
      EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT) << b.label << ": " << message;
      EXPECT_NE(message.find("expert form"), std::string::npos) << b.label << ": " << message;
    }
  }
}

// A suite that runs nothing must fail: there are cases, cpu_avx2 is among the backends on any x86-64 CI machine
// with AVX2, and every backend runs most of the cases.
TEST(BackendOpsSuite, HasCasesAndBackends) {
  ASSERT_FALSE(all_cases().empty());
  const std::vector<BackendUnderTest>& backends = backends_under_test();
  ASSERT_FALSE(backends.empty()) << "no usable backend plugin in " << STRATA_BUILD_PLUGIN_DIR;
  std::vector<size_t> supported(backends.size(), 0);
  for (size_t i = 0; i < all_cases().size(); ++i) {  // each case built once, asked of every backend
    std::mt19937 rng = rng_for(i);
    Instance inst = all_cases()[i]->build(rng);
    std::vector<std::vector<unsigned char>> mem;
    std::vector<void*> ptrs;
    for (const Output& o : inst.outputs) {
      mem.emplace_back(o.bytes);
      ptrs.push_back(mem.back().data());
    }
    const strata_op op = inst.bind(ptrs);
    for (size_t b = 0; b < backends.size(); ++b) {
      supported[b] += backends[b].backend->supports_op(backends[b].ctx, 0, &op) != 0;
    }
  }
  for (size_t b = 0; b < backends.size(); ++b) {
    EXPECT_GT(supported[b], all_cases().size() / 2) << backends[b].label << " supports only " << supported[b] << " cases";
  }
}

}  // namespace
}  // namespace strata::test
