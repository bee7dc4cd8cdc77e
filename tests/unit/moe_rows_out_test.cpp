// MOE_ROUTED's rows out (backend 1.4, i[2] = 1) composed as the hybrid prompt path will use it: a window's experts
// split into disjoint sets, a rows-out op per set but the last into R, then a summing op over the last set with
// src3 = R give exactly the bytes of one MOE_ROUTED over every expert. R's columns are those of one rows-out op
// over every expert, and the last set's columns keep their sentinel; the summing op runs right after an op over
// other rows, so it cannot pass by reading rows left in scratch. On the reference and on cpu_avx2 (each op
// checked to run on the plugin itself, not on the reference behind it); the GPU's version is
// tests/gpu/gpu_moe_rows_out_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine_backends.hpp"
#include "moe_split_window.hpp"
#include "strata/backend.hpp"

namespace strata::test {
namespace {

using format::GgmlType;

// What one backend wrote: one summing op over every expert, the split ops' sum, one rows-out op over every
// expert, and the split ops' R.
struct SplitOutcome {
  std::vector<float> full, split, rows_all, rows;
};

SplitOutcome run_split(Backend& be, const SplitWindow& w) {
  const SplitWindowShape& s = w.shape;
  std::vector<ExpertAt> at;
  for (int64_t e = 0; e < s.n_expert; ++e) {
    const auto i = static_cast<size_t>(e);
    at.push_back({w.gate[i].data(), w.up[i].data(), w.down[i].data()});
  }
  const std::vector<strata_expert_weights> all = split_window_entries(w, at, [](int32_t) { return true; });
  std::vector<std::vector<strata_expert_weights>> per_set;
  for (int set = 0; set < s.n_sets; ++set) {
    per_set.push_back(split_window_entries(w, at, [&](int32_t e) { return w.set_of[static_cast<size_t>(e)] == set; }));
  }
  const strata_expert_table table_all = split_window_table(w, all.data());
  std::vector<strata_expert_table> tables;
  for (const auto& entries : per_set) tables.push_back(split_window_table(w, entries.data()));

  SplitOutcome o;
  o.full = split_sentinel_floats(static_cast<size_t>(s.n_embd * s.n_tok));
  o.split = o.full;
  o.rows_all = split_sentinel_floats(static_cast<size_t>(s.n_embd * w.n_pairs()));
  o.rows = o.rows_all;
  const SplitInputs in{w.x.data(), w.ids.data(), w.weights.data()};
  std::vector<strata_op> ops = {split_window_sum_op(w, in, &table_all, o.full.data(), nullptr),
                                split_window_rows_op(w, in, &table_all, o.rows_all.data())};
  for (int set = 0; set + 1 < s.n_sets; ++set) {
    ops.push_back(split_window_rows_op(w, in, &tables[static_cast<size_t>(set)], o.rows.data()));
  }
  // Other rows through every expert just before the summing op: the rows it leaves in the backend's scratch are
  // wrong for this window, so a sum that read scratch instead of src3 for the NULL entries' pairs would show.
  const std::vector<float> decoy_x = split_decoy_rows(w);
  std::vector<float> decoy_dst(o.full.size());
  ops.push_back(split_window_sum_op(w, {decoy_x.data(), w.ids.data(), w.weights.data()}, &table_all,
                                    decoy_dst.data(), nullptr));
  ops.push_back(split_window_sum_op(w, in, &tables.back(), o.split.data(), o.rows.data()));
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_TRUE(be.supports(ops[i])) << be.name() << " does not run op " << i << " itself";
  }
  be.compute(ops);
  return o;
}

void expect_composes(const SplitWindow& w, const SplitOutcome& o) {
  const SplitWindowShape& s = w.shape;
  const auto n_embd = static_cast<size_t>(s.n_embd);
  EXPECT_EQ(split_first_difference(o.full.data(), o.split.data(), o.full.size(), s.n_embd), "")
      << "one MOE_ROUTED vs rows out per set then a summing op with src3";
  for (int64_t t = 0; t < s.n_tok; ++t) {
    EXPECT_FALSE(is_split_sentinel(o.full.data() + static_cast<size_t>(t) * n_embd, 1)) << "token " << t << " unsummed";
  }
  for (int64_t p = 0; p < w.n_pairs(); ++p) {
    const float* all = o.rows_all.data() + static_cast<size_t>(p) * n_embd;
    const float* split = o.rows.data() + static_cast<size_t>(p) * n_embd;
    const int32_t expert = w.ids[static_cast<size_t>(p)];
    EXPECT_FALSE(is_split_sentinel(all, 1)) << "pair " << p << ": no row from the rows-out op over every expert";
    if (w.in_last_set(expert)) {
      EXPECT_TRUE(is_split_sentinel(split, n_embd)) << "pair " << p << " (expert " << expert
                                                    << ", the summing op's set) was written by a rows-out op";
    } else {
      EXPECT_EQ(split_first_difference(all, split, n_embd, s.n_embd), "")
          << "pair " << p << " (expert " << expert << "): its set's rows-out op vs the one over every expert";
    }
  }
}

void check_backend(Backend& be, const std::vector<SplitWindowShape>& shapes) {
  for (const SplitWindowShape& s : shapes) {
    SCOPED_TRACE(be.name() + ": " + s.describe());
    const SplitWindow w = make_split_window(s, static_cast<uint32_t>(s.n_tok * 7919 + s.n_expert));
    expect_composes(w, run_split(be, w));
  }
}

// Small windows the scalar reference computes quickly: 9 and 40 tokens, three and four sets, q4_K experts with a
// q6_K or q4_K down.
const std::vector<SplitWindowShape> kSmall = {
    {GgmlType::Q4_K, GgmlType::Q6_K, 256, 256, 16, 4, 9, 3},
    {GgmlType::Q4_K, GgmlType::Q4_K, 256, 512, 16, 4, 40, 4},
    {GgmlType::Q8_0, GgmlType::Q8_0, 128, 64, 8, 2, 5, 3},
};

TEST(MoeRowsOut, SplitSumEqualsOneOpOnTheReference) {
  const std::unique_ptr<Backend> be = make_reference_backend();
  check_backend(*be, kSmall);
}

TEST(MoeRowsOut, SplitSumEqualsOneOpOnCpuAvx2) {
  bool usable = false;
  for (const PluginCandidate& c : built_plugins().candidates()) {
    usable |= c.name == "cpu_avx2" && c.verdict == PluginCandidate::Verdict::Usable;
  }
  if (!usable) GTEST_SKIP() << "cpu_avx2 is not usable on this machine";
  const std::unique_ptr<Backend> be = make_plugin_backend(built_plugins().instantiate("cpu_avx2"));
  std::vector<SplitWindowShape> shapes = kSmall;
  // qwen3-30b-a3b's layer (q4_K experts, 128 of them, k 8) over a 40-token window.
  shapes.push_back({GgmlType::Q4_K, GgmlType::Q4_K, 2048, 768, 128, 8, 40, 4});
  check_backend(*be, shapes);
}

}  // namespace
}  // namespace strata::test
