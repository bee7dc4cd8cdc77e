// The op-parity harness's window check (issue 28 item 2; verify windows and speculative decoding rest on it): on
// the reference and on every backend under test (the GPU's default float path and its canonical_double label
// included, where a GPU is usable), ATTENTION over a range of positions in one op gives the same bytes as the same
// positions computed in ops of 1, 2, 3, 5, 8 and 9 tokens. Depths cross the GPU's segments (n_ctx 4096: 128 keys
// each; 70000: 256) and its split/tiles boundary (8 tokens); caches f16, q8_0 and f32; head sizes 128, 64, 37, 8
// and 256 (the GPU's portable kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend_ops_harness.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/format/tensor_checks.hpp"
#include "strata/op_tensor.hpp"

namespace strata::test {
namespace {

using format::GgmlType;

struct WindowShape {
  GgmlType cache;
  int64_t head_dim, n_head, n_kv_head, n_ctx, first, count;
  std::string name() const {
    return std::string(format::type_name(static_cast<uint32_t>(cache))) + "_hd" + std::to_string(head_dim) + "_h" +
           std::to_string(n_head) + "_" + std::to_string(n_kv_head) + "_ctx" + std::to_string(n_ctx) + "_at" +
           std::to_string(first);
  }
};

const std::vector<WindowShape>& shapes() {
  static const std::vector<WindowShape> s = {
      {GgmlType::F16, 128, 32, 4, 4096, 0, 40},      // qwen3-30b-a3b's heads from the first position
      {GgmlType::Q8_0, 128, 32, 4, 4096, 1500, 24},  // deep: many 128-key segments
      {GgmlType::F16, 64, 8, 2, 70000, 300, 20},     // 256-key segments
      {GgmlType::Q8_0, 8, 8, 4, 512, 100, 24},       // stories260K's heads
      {GgmlType::F32, 37, 2, 1, 300, 200, 12},       // an odd head size, f32 caches
      {GgmlType::F16, 256, 4, 2, 1024, 300, 12},     // the GPU's portable kernel
  };
  return s;
}

// The inputs every window of a shape shares.
struct Inputs {
  std::vector<float> q;
  std::vector<unsigned char> k, v;
  std::vector<int32_t> pos;
};

std::shared_ptr<const Inputs> make_inputs(const WindowShape& s) {
  auto in = std::make_shared<Inputs>();
  std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 7 + s.n_ctx + s.first));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t kv_dim = s.head_dim * s.n_kv_head;
  const size_t col = s.cache == GgmlType::F32   ? static_cast<size_t>(kv_dim) * 4
                     : s.cache == GgmlType::F16 ? static_cast<size_t>(kv_dim) * 2
                                                : static_cast<size_t>(kv_dim / 32) * 34;
  std::vector<float> x(static_cast<size_t>(kv_dim));
  for (auto* cache : {&in->k, &in->v}) {
    cache->assign(col * static_cast<size_t>(s.n_ctx), 0);
    for (int64_t j = 0; j < s.first + s.count; ++j) {
      for (float& f : x) f = normal(rng);
      unsigned char* dst = cache->data() + static_cast<size_t>(j) * col;
      if (s.cache == GgmlType::F32) {
        std::memcpy(dst, x.data(), col);
      } else if (s.cache == GgmlType::F16) {
        for (int64_t i = 0; i < kv_dim; ++i) {
          const uint16_t h = format::fp32_to_fp16(x[static_cast<size_t>(i)]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
      } else {
        format::quantize_row(s.cache, x.data(), dst, kv_dim);
      }
    }
  }
  in->q.resize(static_cast<size_t>(s.head_dim * s.n_head * s.count));
  for (float& f : in->q) f = normal(rng);
  for (int64_t t = 0; t < s.count; ++t) in->pos.push_back(static_cast<int32_t>(s.first + t));
  return in;
}

// One op over tokens t0 .. t0 + n - 1 of the shape.
Instance window_instance(const WindowShape& s, const std::shared_ptr<const Inputs>& in, int64_t t0, int64_t n) {
  Instance inst;
  inst.owned.push_back(std::const_pointer_cast<Inputs>(in));
  Output dst;
  dst.name = "dst";
  dst.bytes = static_cast<size_t>(s.head_dim * s.n_head * n) * sizeof(float);
  dst.compare = Compare::Bytes;
  inst.outputs.push_back(dst);
  inst.bind = [s, in, t0, n](const std::vector<void*>& out) {
    strata_op op = new_op(STRATA_OP_ATTENTION);
    op.src[0] = tensor_f32(in->q.data() + t0 * s.head_dim * s.n_head, {s.head_dim, s.n_head, n});
    op.src[1] = make_tensor(in->k.data(), s.cache, {s.head_dim * s.n_kv_head, s.n_ctx});
    op.src[2] = make_tensor(in->v.data(), s.cache, {s.head_dim * s.n_kv_head, s.n_ctx});
    op.src[3] = tensor_i32(in->pos.data() + t0, {n});
    op.dst = tensor_f32(static_cast<float*>(out[0]), {s.head_dim * s.n_head, n});
    op.i[0] = static_cast<int32_t>(s.n_head);
    op.i[1] = static_cast<int32_t>(s.n_kv_head);
    op.f[0] = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    return op;
  };
  return inst;
}

// Runs one instance on `label` ("reference" or a backend under test).
RunResult run_on(const std::string& label, Instance& inst) {
  if (label == "reference") return run_on_reference(inst);
  return run_on_backend(*find_backend(label), inst);
}

class AttentionWindows : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(AttentionWindows, EveryWindowGivesTheOneOpsBytes) {
  const auto& [label, index] = GetParam();
  const WindowShape& s = shapes()[index];
  const std::shared_ptr<const Inputs> in = make_inputs(s);
  Instance whole = window_instance(s, in, 0, s.count);
  const RunResult want = run_on(label, whole);
  if (!want.supported) GTEST_SKIP() << label << " does not support " << s.name();
  ASSERT_TRUE(want.error.empty()) << label << ": " << want.error;
  const size_t row_bytes = static_cast<size_t>(s.head_dim * s.n_head) * sizeof(float);
  for (int64_t w : {1, 2, 3, 5, 8, 9}) {
    std::vector<unsigned char> got;
    for (int64_t t0 = 0; t0 < s.count; t0 += w) {
      Instance part = window_instance(s, in, t0, std::min(w, s.count - t0));
      const RunResult r = run_on(label, part);
      ASSERT_TRUE(r.error.empty()) << label << ": " << r.error;
      got.insert(got.end(), r.out[0].begin(), r.out[0].end());
    }
    ASSERT_EQ(got.size(), want.out[0].size());
    for (size_t i = 0; i < got.size(); i += 4) {
      if (std::memcmp(got.data() + i, want.out[0].data() + i, 4) != 0) {
        ADD_FAILURE() << s.name() << " on " << label << ": windows of " << w << " tokens differ from one op at position "
                      << s.first + static_cast<int64_t>(i / row_bytes) << ", value " << (i % row_bytes) / 4;
        break;
      }
    }
  }
}

std::vector<std::string> labels() {
  std::vector<std::string> l = {"reference"};
  for (const std::string& b : backend_labels()) l.push_back(b);
  return l;
}

std::vector<size_t> shape_indices() {
  std::vector<size_t> v(shapes().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(Parity, AttentionWindows, ::testing::Combine(::testing::ValuesIn(labels()), ::testing::ValuesIn(shape_indices())),
                         [](const ::testing::TestParamInfo<AttentionWindows::ParamType>& p) {
                           return std::get<0>(p.param) + "_" + test_name(shapes()[std::get<1>(p.param)].name());
                         });

}  // namespace
}  // namespace strata::test
