// ATTENTION on the GPU backend's default (float, tensor-core) path, ctest label `gpu`; skips where no GPU backend is
// usable. The promise verify windows and speculative decoding rest on (issue 28 item 2): a position's output has
// the same bytes whether it is computed in a prompt chunk, in a window of 2 to 9 tokens, or in a one-token step, at
// any depth. Each case fills the caches once (random keys and values, f16 or q8_0), computes every position of a
// range in one op (the prompt path), then the same positions again one token at a time, in windows of 2..9 tokens
// and in chunks of 37 and 64 tokens, and compares the bytes. Depths cross many segments (the split path's unit),
// the capacities give three segment sizes, and the head sizes take every tensor-core tile width (32, 64, 128; 8 is
// padded) and the portable kernel (256). Every output is also checked against the reference backend (double) by
// NMSE, so that equal bytes are also right ones. gpt-oss's shapes (backend 1.6) add a sliding window (i[2]; the
// columns below every checked position's window are poisoned like those past the last) and sinks (src4).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../unit/float_nmse.hpp"
#include "gpu_test_support.hpp"
#include "strata/backend.hpp"
#include "strata/device_memory.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/op_tensor.hpp"

namespace {

using strata::format::GgmlType;
using strata::gpu_tests::gpu_backend;
using strata::gpu_tests::plugins;

struct Shape {
  GgmlType cache;
  int64_t head_dim, n_head, n_kv_head, n_ctx;
  int64_t first, count;  // the positions checked: first .. first + count - 1 (the caches hold 0 .. first + count - 1)
  int32_t window = 0;    // ATTENTION's i[2]: 0, or a sliding window of this many keys
  bool sinks = false;    // a sink logit per q head (src4)
  std::string describe() const {
    return std::string(cache == GgmlType::F16 ? "f16" : "q8_0") + " head_dim " + std::to_string(head_dim) + ", " +
           std::to_string(n_head) + "/" + std::to_string(n_kv_head) + " heads, n_ctx " + std::to_string(n_ctx) +
           ", positions " + std::to_string(first) + ".." + std::to_string(first + count - 1) +
           (window > 0 ? ", window " + std::to_string(window) : "") + (sinks ? ", sinks" : "");
  }
};

// One column of a cache from floats: f16 values, or q8_0 blocks.
std::vector<unsigned char> cache_bytes(GgmlType type, const std::vector<float>& x, int64_t kv_dim, int64_t n_ctx) {
  const size_t col = type == GgmlType::F16 ? static_cast<size_t>(kv_dim) * 2 : static_cast<size_t>(kv_dim / 32) * 34;
  std::vector<unsigned char> out(col * static_cast<size_t>(n_ctx));
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* src = x.data() + j * kv_dim;
    unsigned char* dst = out.data() + static_cast<size_t>(j) * col;
    if (type == GgmlType::F16) {
      for (int64_t i = 0; i < kv_dim; ++i) {
        const uint16_t h = strata::format::fp32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      strata::format::quantize_row(type, src, dst, kv_dim);
    }
  }
  return out;
}

class Case {
 public:
  Case(strata::Backend& be, const Shape& s) : be_(be), mem_(*be.device_memory()), s_(s) {
    std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 131 + s.n_ctx + s.first));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t kv_dim = s.head_dim * s.n_kv_head, filled = s.first + s.count;
    std::vector<float> k(static_cast<size_t>(kv_dim * s.n_ctx), 0.0f), v(k.size(), 0.0f);
    for (int64_t i = 0; i < kv_dim * filled; ++i) {
      k[static_cast<size_t>(i)] = normal(rng);
      v[static_cast<size_t>(i)] = normal(rng);
    }
    // Columns past the filled ones, and below the first checked position's sliding window, hold NaN (f16) or huge
    // blocks: a kernel that let them into a sum would show.
    const auto poison = [&](int64_t i) {
      k[static_cast<size_t>(i)] = s.cache == GgmlType::F16 ? NAN : 60000.0f;
      v[static_cast<size_t>(i)] = k[static_cast<size_t>(i)];
    };
    for (int64_t i = kv_dim * filled; i < kv_dim * s.n_ctx; ++i) poison(i);
    if (s.window > 0) {
      for (int64_t i = 0; i < kv_dim * std::max<int64_t>(0, s.first - s.window + 1); ++i) poison(i);
    }
    k_host_ = cache_bytes(s.cache, k, kv_dim, s.n_ctx);
    v_host_ = cache_bytes(s.cache, v, kv_dim, s.n_ctx);
    q_host_.resize(static_cast<size_t>(s.head_dim * s.n_head * s.count));
    for (float& x : q_host_) x = normal(rng);
    // Sinks around the scores' size, so that some outweigh every key and some do not.
    for (int64_t h = 0; h < s.n_head; ++h) sinks_host_.push_back(1.0f + 2.0f * normal(rng));
    if (s.sinks) sinks_ = upload(sinks_host_.data(), sinks_host_.size() * sizeof(float));
    k_ = upload(k_host_.data(), k_host_.size());
    v_ = upload(v_host_.data(), v_host_.size());
    q_ = upload(q_host_.data(), q_host_.size() * sizeof(float));
    std::vector<int32_t> pos(static_cast<size_t>(s.count));
    for (int64_t t = 0; t < s.count; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(s.first + t);
    pos_host_ = pos;
    pos_ = upload(pos.data(), pos.size() * sizeof(int32_t));
    out_ = static_cast<float*>(alloc(static_cast<size_t>(row_floats() * s.count) * sizeof(float)));
  }
  ~Case() {
    for (void* p : buffers_) mem_.release(p);
  }
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;

  int64_t row_floats() const { return s_.head_dim * s_.n_head; }

  // The positions computed by ops of `window` tokens each (the last one shorter), in order, in one op list.
  std::vector<float> run(int64_t window) {
    std::vector<float> nan_rows(static_cast<size_t>(row_floats() * s_.count), NAN);
    mem_.upload(out_, nan_rows.data(), nan_rows.size() * sizeof(float));
    std::vector<strata_op> ops;
    for (int64_t t0 = 0; t0 < s_.count; t0 += window) ops.push_back(op(t0, std::min(window, s_.count - t0), out_, q_, pos_));
    be_.compute(ops);
    std::vector<float> got(nan_rows.size());
    mem_.download(got.data(), out_, got.size() * sizeof(float));
    return got;
  }

  // The reference backend's rows (double attention) for tokens t0 .. t0 + n - 1.
  std::vector<float> reference(int64_t t0, int64_t n) {
    std::vector<float> got(static_cast<size_t>(row_floats() * n));
    const strata_op o = op(0, n, got.data(), q_host_.data() + t0 * row_floats(), pos_host_.data() + t0, k_host_.data(),
                           v_host_.data());
    strata::make_reference_backend()->compute({&o, 1});
    return got;
  }

 private:
  strata_op op(int64_t t0, int64_t n, float* out, const float* q, const int32_t* pos, const void* k = nullptr,
               const void* v = nullptr) const {
    strata_op o = strata::new_op(STRATA_OP_ATTENTION);
    o.src[0] = strata::tensor_f32(q + t0 * row_floats(), {s_.head_dim, s_.n_head, n});
    o.src[1] = strata::make_tensor(k != nullptr ? k : k_, s_.cache, {s_.head_dim * s_.n_kv_head, s_.n_ctx});
    o.src[2] = strata::make_tensor(v != nullptr ? v : v_, s_.cache, {s_.head_dim * s_.n_kv_head, s_.n_ctx});
    o.src[3] = strata::tensor_i32(pos + t0, {n});
    o.dst = strata::tensor_f32(out + t0 * row_floats(), {row_floats(), n});
    o.i[0] = static_cast<int32_t>(s_.n_head);
    o.i[1] = static_cast<int32_t>(s_.n_kv_head);
    o.f[0] = 1.0f / std::sqrt(static_cast<float>(s_.head_dim));
    o.i[2] = s_.window;
    if (s_.sinks) o.src4 = strata::tensor_f32(k != nullptr ? sinks_host_.data() : sinks_, {s_.n_head});
    return o;
  }
  void* alloc(size_t bytes) {
    buffers_.push_back(mem_.allocate(bytes));
    return buffers_.back();
  }
  template <class T>
  T* upload(const T* host, size_t bytes) {
    void* p = alloc(bytes);
    mem_.upload(p, host, bytes);
    return static_cast<T*>(p);
  }

  strata::Backend& be_;
  strata::DeviceMemory& mem_;
  Shape s_;
  std::vector<unsigned char> k_host_, v_host_;
  std::vector<float> q_host_, sinks_host_;
  std::vector<int32_t> pos_host_;
  const unsigned char *k_ = nullptr, *v_ = nullptr;
  const float* q_ = nullptr;
  const float* sinks_ = nullptr;
  const int32_t* pos_ = nullptr;
  float* out_ = nullptr;
  std::vector<void*> buffers_;
};

// The first differing float of two runs, "" when their bytes are equal.
std::string first_difference(const std::vector<float>& a, const std::vector<float>& b, int64_t row_floats, int64_t first) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      const int64_t t = static_cast<int64_t>(i) / row_floats;
      return "position " + std::to_string(first + t) + ", value " + std::to_string(static_cast<int64_t>(i) % row_floats) +
             ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    }
  }
  return "";
}

TEST(GpuAttentionWindows, EveryWindowGivesThePromptsBytes) {
  std::string why;
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) GTEST_SKIP() << why;
  const std::unique_ptr<strata::Backend> be = strata::make_plugin_backend(plugins().instantiate(gpu));
  const Shape shapes[] = {
      {GgmlType::F16, 128, 32, 4, 4096, 0, 300},       // qwen3-30b-a3b's heads, from the first position
      {GgmlType::Q8_0, 128, 32, 4, 4096, 1900, 140},   // past 14 segments of 128 keys
      {GgmlType::F16, 128, 16, 2, 131072, 2300, 90},   // 256-key segments
      {GgmlType::F16, 64, 8, 2, 300000, 1000, 70},     // 1024-key segments: a segment spans this whole window
      {GgmlType::Q8_0, 64, 12, 4, 2048, 500, 77},      // a group of 3
      {GgmlType::F16, 32, 4, 4, 1024, 60, 40},         // 32 values a head, no grouping
      {GgmlType::Q8_0, 8, 8, 4, 512, 0, 100},          // stories260K's heads (padded to 32)
      {GgmlType::F16, 256, 4, 2, 1024, 200, 24},       // the portable kernel
      // gpt-oss (backend 1.6): 64 heads of 64 over 8 kv heads, sliding layers of 128 keys with sinks, full layers
      // with sinks; and the portable kernel with both.
      {GgmlType::F16, 64, 64, 8, 4096, 1000, 70, 128, true},
      {GgmlType::Q8_0, 64, 64, 8, 4096, 0, 300, 128, true},  // the window fills up from the first position
      {GgmlType::F16, 64, 64, 8, 4096, 500, 60, 0, true},
      {GgmlType::F16, 64, 64, 8, 4096, 700, 40, 128, false},
      {GgmlType::F16, 256, 4, 2, 1024, 300, 24, 100, true},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(gpu + ": " + s.describe());
    Case c(*be, s);
    const std::vector<float> prompt = c.run(s.count);
    for (int64_t window : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, int64_t{9}, int64_t{37}, int64_t{64}}) {
      EXPECT_EQ(first_difference(prompt, c.run(window), c.row_floats(), s.first), "")
          << "windows of " << window << " tokens vs one op over all " << s.count;
    }
    EXPECT_EQ(first_difference(prompt, c.run(s.count), c.row_floats(), s.first), "") << "a second run of the prompt";
    // Against the reference on a few tokens (the scalar reference is slow at depth).
    for (int64_t t0 : {int64_t{0}, s.count / 2, s.count - 3}) {
      const std::vector<float> want = c.reference(t0, 3);
      const std::vector<float> got(prompt.begin() + t0 * c.row_floats(), prompt.begin() + (t0 + 3) * c.row_floats());
      EXPECT_EQ(strata::test::nmse_mismatch("tokens " + std::to_string(t0) + ".." + std::to_string(t0 + 2), want, got, 1e-5),
                "")
          << "against the reference backend";
    }
  }
}

}  // namespace
