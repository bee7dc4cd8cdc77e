// The op-parity suite: every case of backend_ops_cases.cpp on every backend under test against the reference
// backend (memcmp for the canonical ops, NMSE with NaN/Inf parity for the others, guard bytes around outputs);
// "not supported" is a skip with its own message. Where the machine has cpu_avx2's AVX-512 path, every case also
// runs on both of its paths and must give the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "backend_ops_harness.hpp"

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

// cpu_avx2's two paths give the same bytes for every op.
class CpuPaths : public ::testing::TestWithParam<size_t> {};

TEST_P(CpuPaths, Avx512EqualsAvx2) {
  const BackendUnderTest* native = find_backend("cpu_avx2");
  const BackendUnderTest* forced = find_backend("cpu_avx2_force_avx2");
  if (native == nullptr || forced == nullptr) GTEST_SKIP() << "this CPU has only cpu_avx2's AVX2 path";
  const size_t index = GetParam();
  const OpCase& c = *all_cases()[index];
  std::mt19937 rng = rng_for(index);
  Instance inst = c.build(rng);
  const RunResult a = run_on_backend(*native, inst);
  const RunResult b = run_on_backend(*forced, inst);
  ASSERT_EQ(a.supported, b.supported);
  if (!a.supported) GTEST_SKIP() << "cpu_avx2 does not support " << c.vars();
  expect_ran(a, "cpu_avx2");
  expect_ran(b, "cpu_avx2 (force_avx2)");
  for (size_t i = 0; i < inst.outputs.size(); ++i) {
    Output exact = inst.outputs[i];
    exact.compare = Compare::Bytes;
    const std::string diff = compare_output(exact, b.out[i], a.out[i], 0.0);
    EXPECT_TRUE(diff.empty()) << c.vars() << ": AVX-512 vs AVX2: " << diff;
  }
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
