// MOE_ROUTED's rows out (backend 1.4, i[2] = 1) on a GPU (ctest label `gpu`; skips where no GPU backend is usable),
// composed as the hybrid prompt path will use it: a window's experts split into disjoint sets, a rows-out op per set
// but the last into R (device memory), then a summing op over the last set with src3 = R, in one op list, give
// exactly the bytes of one MOE_ROUTED over every expert. R's columns are those of one rows-out op over every
// expert, and the last set's columns keep their sentinel; the summing op runs right after an op over other rows, so
// it cannot pass by reading rows left in scratch. Windows of every cuda path at qwen3-30b-a3b's layer
// shape (q4_K experts, 128 of them, k 8): decode (1 and 5 tokens), the pair kernels (9 and 40 tokens: under four
// pairs per expert) and the tiled experts (512 tokens; 40 tokens over 16 experts). Each list runs twice (the
// second call may replay a captured graph) and must give the same bytes. The small windows are also checked
// against the reference backend. The CPU backends' version is tests/unit/moe_rows_out_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../unit/moe_split_window.hpp"
#include "gpu_test_support.hpp"
#include "strata/backend.hpp"
#include "strata/device_memory.hpp"

namespace {

using strata::format::GgmlType;
using strata::gpu_tests::gpu_backend;
using strata::gpu_tests::plugins;
namespace t = strata::test;

// What one run wrote (downloaded): one summing op over every expert, the split ops' sum, one rows-out op over
// every expert, and the split ops' R.
struct Outcome {
  std::vector<float> full, split, rows_all, rows;
};

// A window in device memory: every expert's matrices, the inputs, the tables (one over every expert, one per set),
// the outputs, and the op list over them.
class DeviceWindow {
 public:
  DeviceWindow(strata::DeviceMemory& mem, const t::SplitWindow& w) : mem_(mem), w_(w) {
    const t::SplitWindowShape& s = w.shape;
    std::vector<t::ExpertAt> at;
    for (size_t e = 0; e < w.gate.size(); ++e) {
      at.push_back({upload(w.gate[e].data(), w.gate[e].size()), upload(w.up[e].data(), w.up[e].size()),
                    upload(w.down[e].data(), w.down[e].size())});
    }
    const auto entries = [&](const std::function<bool(int32_t)>& keep) {
      const std::vector<strata_expert_weights> v = t::split_window_entries(w, at, keep);
      return t::split_window_table(w, static_cast<const strata_expert_weights*>(
                                          upload(v.data(), v.size() * sizeof(strata_expert_weights))));
    };
    tables_.push_back(entries([](int32_t) { return true; }));
    for (int set = 0; set < s.n_sets; ++set) {
      tables_.push_back(entries([&](int32_t e) { return w.set_of[static_cast<size_t>(e)] == set; }));
    }
    const t::SplitInputs in{static_cast<const float*>(upload(w.x.data(), w.x.size() * sizeof(float))),
                            static_cast<const int32_t*>(upload(w.ids.data(), w.ids.size() * sizeof(int32_t))),
                            static_cast<const float*>(upload(w.weights.data(), w.weights.size() * sizeof(float)))};
    const std::vector<float> decoy_x = t::split_decoy_rows(w);
    t::SplitInputs decoy = in;
    decoy.x = static_cast<const float*>(upload(decoy_x.data(), decoy_x.size() * sizeof(float)));
    full_ = alloc(sums_bytes());
    split_ = alloc(sums_bytes());
    rows_all_ = alloc(rows_bytes());
    rows_ = alloc(rows_bytes());
    float* decoy_dst = alloc(sums_bytes());
    ops_.push_back(t::split_window_sum_op(w, in, &tables_[0], full_, nullptr));
    ops_.push_back(t::split_window_rows_op(w, in, &tables_[0], rows_all_));
    for (int set = 0; set + 1 < s.n_sets; ++set) {
      ops_.push_back(t::split_window_rows_op(w, in, &tables_[static_cast<size_t>(set) + 1], rows_));
    }
    // Other rows through every expert just before the summing op: the rows it leaves in the backend's scratch are
    // wrong for this window, so a sum that read scratch instead of src3 for the NULL entries' pairs would show.
    ops_.push_back(t::split_window_sum_op(w, decoy, &tables_[0], decoy_dst, nullptr));
    ops_.push_back(t::split_window_sum_op(w, in, &tables_.back(), split_, rows_));
  }
  ~DeviceWindow() {
    for (void* p : buffers_) mem_.release(p);
  }
  DeviceWindow(const DeviceWindow&) = delete;
  DeviceWindow& operator=(const DeviceWindow&) = delete;

  const std::vector<strata_op>& ops() const { return ops_; }

  // Sentinels into every output, the op list, then every output read back.
  Outcome run(strata::Backend& be) {
    for (float* p : {full_, split_}) fill(p, sums_bytes());
    for (float* p : {rows_all_, rows_}) fill(p, rows_bytes());
    be.compute(ops_);
    return {download(full_, sums_bytes()), download(split_, sums_bytes()), download(rows_all_, rows_bytes()),
            download(rows_, rows_bytes())};
  }

 private:
  size_t sums_bytes() const { return static_cast<size_t>(w_.shape.n_embd * w_.shape.n_tok) * sizeof(float); }
  size_t rows_bytes() const { return static_cast<size_t>(w_.shape.n_embd * w_.n_pairs()) * sizeof(float); }
  float* alloc(size_t bytes) {
    buffers_.push_back(mem_.allocate(bytes));
    return static_cast<float*>(buffers_.back());
  }
  void* upload(const void* host, size_t bytes) {
    void* p = alloc(bytes);
    mem_.upload(p, host, bytes);
    return p;
  }
  void fill(float* p, size_t bytes) {
    const std::vector<float> v = t::split_sentinel_floats(bytes / sizeof(float));
    mem_.upload(p, v.data(), bytes);
  }
  std::vector<float> download(const float* p, size_t bytes) {
    std::vector<float> v(bytes / sizeof(float));
    mem_.download(v.data(), p, bytes);
    return v;
  }

  strata::DeviceMemory& mem_;
  const t::SplitWindow& w_;
  std::vector<void*> buffers_;
  std::vector<strata_expert_table> tables_;  // [0] every expert, then one per set
  float *full_ = nullptr, *split_ = nullptr, *rows_all_ = nullptr, *rows_ = nullptr;
  std::vector<strata_op> ops_;
};

void expect_composes(const t::SplitWindow& w, const Outcome& o) {
  const t::SplitWindowShape& s = w.shape;
  const auto n_embd = static_cast<size_t>(s.n_embd);
  EXPECT_EQ(t::split_first_difference(o.full.data(), o.split.data(), o.full.size(), s.n_embd), "")
      << "one MOE_ROUTED vs rows out per set then a summing op with src3";
  for (int64_t tok = 0; tok < s.n_tok; ++tok) {
    EXPECT_FALSE(t::is_split_sentinel(o.full.data() + static_cast<size_t>(tok) * n_embd, 1)) << "token " << tok << " unsummed";
  }
  int64_t bad = 0;  // pairs reported, so a broken path does not print thousands of lines
  for (int64_t p = 0; p < w.n_pairs() && bad < 8; ++p) {
    const float* all = o.rows_all.data() + static_cast<size_t>(p) * n_embd;
    const float* split = o.rows.data() + static_cast<size_t>(p) * n_embd;
    const int32_t expert = w.ids[static_cast<size_t>(p)];
    if (t::is_split_sentinel(all, 1)) {
      ++bad;
      ADD_FAILURE() << "pair " << p << ": no row from the rows-out op over every expert";
    } else if (w.in_last_set(expert)) {
      if (!t::is_split_sentinel(split, n_embd)) {
        ++bad;
        ADD_FAILURE() << "pair " << p << " (expert " << expert << ", the summing op's set) was written by a rows-out op";
      }
    } else if (const std::string d = t::split_first_difference(all, split, n_embd, s.n_embd); !d.empty()) {
      ++bad;
      ADD_FAILURE() << "pair " << p << " (expert " << expert << "): its set's rows-out op vs the one over every expert: " << d;
    }
  }
}

// The reference backend's sum over every expert (host memory).
std::vector<float> reference_sum(const t::SplitWindow& w) {
  std::vector<t::ExpertAt> at;
  for (size_t e = 0; e < w.gate.size(); ++e) at.push_back({w.gate[e].data(), w.up[e].data(), w.down[e].data()});
  const std::vector<strata_expert_weights> entries = t::split_window_entries(w, at, [](int32_t) { return true; });
  const strata_expert_table table = t::split_window_table(w, entries.data());
  std::vector<float> dst = t::split_sentinel_floats(static_cast<size_t>(w.shape.n_embd * w.shape.n_tok));
  const strata_op op = t::split_window_sum_op(w, {w.x.data(), w.ids.data(), w.weights.data()}, &table, dst.data(), nullptr);
  strata::make_reference_backend()->compute({&op, 1});
  return dst;
}

TEST(GpuMoeRowsOut, SplitSumEqualsOneOp) {
  std::string why;
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) GTEST_SKIP() << why;
  const std::unique_ptr<strata::Backend> be = strata::make_plugin_backend(plugins().instantiate(gpu));
  strata::DeviceMemory& mem = *be->device_memory();
  struct Case {
    t::SplitWindowShape shape;
    bool against_reference;  // the scalar reference is slow at this size: the small windows only
  };
  const Case cases[] = {
      {{GgmlType::Q4_K, GgmlType::Q4_K, 2048, 768, 128, 8, 1, 3}, true},    // decode
      {{GgmlType::Q4_K, GgmlType::Q6_K, 2048, 768, 128, 8, 5, 4}, true},    // decode, q6_K down
      {{GgmlType::Q4_K, GgmlType::Q4_K, 2048, 768, 128, 8, 9, 3}, true},    // pair kernels
      {{GgmlType::Q4_K, GgmlType::Q4_K, 2048, 768, 128, 8, 40, 4}, false},  // pair kernels
      {{GgmlType::Q4_K, GgmlType::Q4_K, 2048, 768, 128, 8, 512, 4}, false}, // tiled experts
      {{GgmlType::Q4_K, GgmlType::Q6_K, 2048, 768, 128, 8, 512, 3}, false}, // tiled experts, q6_K down
      {{GgmlType::Q4_K, GgmlType::Q6_K, 1024, 512, 16, 4, 40, 3}, false},   // tiled experts at 40 tokens
  };
  for (const Case& c : cases) {
    const t::SplitWindowShape& s = c.shape;
    SCOPED_TRACE(gpu + ": " + s.describe());
    const t::SplitWindow w = t::make_split_window(s, static_cast<uint32_t>(s.n_tok * 7919 + s.n_expert));
    DeviceWindow dev(mem, w);
    for (size_t i = 0; i < dev.ops().size(); ++i) {
      ASSERT_TRUE(be->supports(dev.ops()[i])) << gpu << " refuses op " << i << " of the list";
    }
    const Outcome first = dev.run(*be);
    expect_composes(w, first);
    const Outcome again = dev.run(*be);
    EXPECT_EQ(t::split_first_difference(first.split.data(), again.split.data(), first.split.size(), s.n_embd), "")
        << "the second run's split sum differs from the first's";
    EXPECT_EQ(t::split_first_difference(first.rows.data(), again.rows.data(), first.rows.size(), s.n_embd), "")
        << "the second run's rows differ from the first's";
    if (c.against_reference) {
      const std::vector<float> want = reference_sum(w);
      EXPECT_EQ(t::split_first_difference(want.data(), first.full.data(), want.size(), s.n_embd), "")
          << "the GPU's sum over every expert vs the reference's";
    }
  }
}

}  // namespace
