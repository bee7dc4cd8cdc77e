// The fused router on a GPU (ctest label `gpu`; skips where no GPU backend is usable): MUL_MAT of float router
// weights then ROUTER of its logits, two layers in one op list, run fused (direct, captured, then graph replays,
// so the launch's done-counter must come back to 0 every time) give exactly the bytes of the ops run one by one
// (fuse=false), logits, ids and weights alike, and match the reference backend: logits bytes (canonical
// arithmetic), ids exact, weights NMSE <= 1e-16 (double rounded once, as the ROUTER parity cases).
#include <gtest/gtest.h>

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
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"
#include "strata/reference_backend.hpp"

namespace {

using strata::format::GgmlType;
using strata::gpu_tests::gpu_backend;
using strata::gpu_tests::plugins;

struct Shape {
  GgmlType type;
  int64_t n_in, n_expert, k, n_tok;
  int gating;  // 0 softmax, 1 sigmoid
  bool normalize, bias;
};

std::string describe(const Shape& s) {
  return std::string(strata::format::traits(s.type).name) + " " + std::to_string(s.n_in) + "x" +
         std::to_string(s.n_expert) + " k " + std::to_string(s.k) + " tokens " + std::to_string(s.n_tok) +
         (s.gating == 0 ? " softmax" : " sigmoid") + (s.normalize ? " normalized" : "") + (s.bias ? " biased" : "");
}

// One layer's inputs on the host: the router weight as stored, the normed rows, the selection bias.
struct Layer {
  std::vector<unsigned char> w;
  std::vector<float> x, bias;
};

Layer make_layer(const Shape& s, std::mt19937& rng) {
  Layer l;
  std::normal_distribution<float> weight(0.0f, 0.05f), unit(0.0f, 1.0f), small(0.0f, 0.1f);
  const size_t n_w = static_cast<size_t>(s.n_in * s.n_expert);
  l.w.resize(strata::format::row_bytes(s.type, static_cast<uint64_t>(s.n_in)) * static_cast<size_t>(s.n_expert));
  for (size_t i = 0; i < n_w; ++i) {
    const float v = weight(rng);
    if (s.type == GgmlType::F32) {
      std::memcpy(&l.w[4 * i], &v, 4);
    } else {
      const uint16_t h = s.type == GgmlType::F16 ? strata::format::fp32_to_fp16(v) : strata::format::fp32_to_bf16(v);
      std::memcpy(&l.w[2 * i], &h, 2);
    }
  }
  l.x.resize(static_cast<size_t>(s.n_in * s.n_tok));
  for (float& v : l.x) v = unit(rng);
  if (s.bias) {
    l.bias.resize(static_cast<size_t>(s.n_expert));
    for (float& v : l.bias) v = small(rng);
  }
  return l;
}

// Where one layer's tensors live (host or device memory): inputs, then the three outputs.
struct Place {
  const void* w;
  const float* x;
  const float* bias;  // nullptr: none
  float* logits;
  int32_t* ids;
  float* weights;
};

void push_layer(std::vector<strata_op>& ops, const Shape& s, const Place& p) {
  strata_op mm{};
  mm.struct_size = sizeof mm;
  mm.kind = STRATA_OP_MUL_MAT;
  mm.src[0] = strata::make_tensor(p.w, s.type, {s.n_in, s.n_expert});
  mm.src[1] = strata::tensor_f32(p.x, {s.n_in, s.n_tok});
  mm.dst = strata::tensor_f32(p.logits, {s.n_expert, s.n_tok});
  for (int i = 2; i < 4; ++i) mm.src[i] = strata::no_tensor();
  ops.push_back(mm);
  strata_op route{};
  route.struct_size = sizeof route;
  route.kind = STRATA_OP_ROUTER;
  route.src[0] = mm.dst;
  route.src[1] = p.bias != nullptr ? strata::tensor_f32(p.bias, {s.n_expert}) : strata::no_tensor();
  route.src[2] = strata::tensor_f32(p.weights, {s.k, s.n_tok});
  route.src[3] = strata::no_tensor();
  route.dst = strata::tensor_i32(p.ids, {s.k, s.n_tok});
  route.i[0] = static_cast<int32_t>(s.k);
  route.i[1] = s.gating;
  route.i[2] = s.normalize ? 1 : 0;
  route.f[0] = 2.5f;
  ops.push_back(route);
}

// Every output of a run, layer after layer: logits, ids, weights as bytes.
using Outputs = std::vector<std::vector<unsigned char>>;

// The two layers on a backend: inputs uploaded once, outputs filled with a sentinel before each of `calls`
// compute calls and read back after it.
class DeviceRun {
 public:
  DeviceRun(std::unique_ptr<strata::Backend> be, const Shape& s, const std::vector<Layer>& layers)
      : be_(std::move(be)), mem_(*be_->device_memory()), s_(s) {
    for (const Layer& l : layers) {
      Place p{};
      p.w = upload(l.w.data(), l.w.size());
      p.x = static_cast<const float*>(upload(l.x.data(), l.x.size() * sizeof(float)));
      p.bias = l.bias.empty() ? nullptr : static_cast<const float*>(upload(l.bias.data(), l.bias.size() * sizeof(float)));
      p.logits = static_cast<float*>(alloc(logit_bytes()));
      p.ids = static_cast<int32_t*>(alloc(route_bytes()));
      p.weights = static_cast<float*>(alloc(route_bytes()));
      places_.push_back(p);
      push_layer(ops_, s, p);
    }
  }
  ~DeviceRun() {
    for (void* p : buffers_) mem_.release(p);
  }
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;

  Outputs run() {
    for (const Place& p : places_) {
      fill(p.logits, logit_bytes());
      fill(p.ids, route_bytes());
      fill(p.weights, route_bytes());
    }
    be_->compute(ops_);
    Outputs out;
    for (const Place& p : places_) {
      out.push_back(download(p.logits, logit_bytes()));
      out.push_back(download(p.ids, route_bytes()));
      out.push_back(download(p.weights, route_bytes()));
    }
    return out;
  }

 private:
  size_t logit_bytes() const { return static_cast<size_t>(s_.n_expert * s_.n_tok) * sizeof(float); }
  size_t route_bytes() const { return static_cast<size_t>(s_.k * s_.n_tok) * 4; }
  void* alloc(size_t bytes) {
    buffers_.push_back(mem_.allocate(bytes));
    return buffers_.back();
  }
  void* upload(const void* host, size_t bytes) {
    void* p = alloc(bytes);
    mem_.upload(p, host, bytes);
    return p;
  }
  void fill(void* p, size_t bytes) {
    const std::vector<unsigned char> sentinel(bytes, 0x7f);
    mem_.upload(p, sentinel.data(), bytes);
  }
  std::vector<unsigned char> download(const void* p, size_t bytes) {
    std::vector<unsigned char> v(bytes);
    mem_.download(v.data(), p, bytes);
    return v;
  }

  std::unique_ptr<strata::Backend> be_;
  strata::DeviceMemory& mem_;
  Shape s_;
  std::vector<void*> buffers_;
  std::vector<Place> places_;
  std::vector<strata_op> ops_;
};

// The reference backend's outputs for the same layers.
Outputs reference(const Shape& s, const std::vector<Layer>& layers) {
  Outputs out;
  for (const Layer& l : layers) {
    std::vector<float> logits(static_cast<size_t>(s.n_expert * s.n_tok)), weights(static_cast<size_t>(s.k * s.n_tok));
    std::vector<int32_t> ids(weights.size());
    std::vector<strata_op> ops;
    push_layer(ops, s, {l.w.data(), l.x.data(), l.bias.empty() ? nullptr : l.bias.data(), logits.data(), ids.data(),
                        weights.data()});
    strata::run_reference(ops.data(), ops.size());
    const auto bytes = [](const auto& v) {
      std::vector<unsigned char> b(v.size() * 4);
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    out.push_back(bytes(logits));
    out.push_back(bytes(ids));
    out.push_back(bytes(weights));
  }
  return out;
}


const char* const kOutputNames[3] = {"logits", "ids", "weights"};

TEST(GpuFusedRouter, SameBytesAsOneByOneAndTheReference) {
  std::string why;
  const std::string gpu = gpu_backend(why);
  if (gpu.empty()) GTEST_SKIP() << why;
  // qwen3-30b-a3b's decode router and windows of 2 to 4 tokens; a 256-expert sigmoid router with a bias; 16-bit
  // weights; an odd row (one float at a time, a partial warp of experts); many experts (four rows a block, four
  // experts a thread); a grid of 8 blocks.
  const Shape shapes[] = {
      {GgmlType::F32, 2048, 128, 8, 1, 0, true, false},  {GgmlType::F32, 2048, 128, 8, 2, 0, true, false},
      {GgmlType::F32, 2048, 128, 8, 3, 0, true, false},  {GgmlType::F32, 2048, 256, 8, 1, 1, true, true},
      {GgmlType::F16, 2048, 128, 8, 1, 0, true, false},  {GgmlType::BF16, 1024, 64, 6, 4, 0, false, false},
      {GgmlType::F32, 203, 60, 4, 1, 0, true, false},    {GgmlType::F32, 512, 1024, 8, 2, 1, true, true},
      {GgmlType::F32, 64, 8, 2, 1, 0, false, false},
  };
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    std::mt19937 rng(static_cast<unsigned>(s.n_in * 131 + s.n_expert * 7 + s.n_tok));
    const std::vector<Layer> layers = {make_layer(s, rng), make_layer(s, rng)};
    const Outputs want = reference(s, layers);
    // The double path (canonical_double: the reference's arithmetic, weights within 1e-16) and the default float
    // path (its own bits: weights within 1e-10 of the reference's; logits (canonical) and ids the same bytes);
    // fused = one by one in each.
    for (const bool dbl : {true, false}) {
      SCOPED_TRACE(dbl ? "canonical_double" : "float");
      std::vector<std::string> plain_options = {"fuse=false", "graphs=false"}, fused_options;
      if (dbl) plain_options.push_back("canonical_double=true"), fused_options.push_back("canonical_double=true");
      DeviceRun plain(strata::make_plugin_backend(plugins().instantiate(gpu, plain_options)), s, layers);
      const Outputs one_by_one = plain.run();
      DeviceRun fused(strata::make_plugin_backend(plugins().instantiate(gpu, fused_options)), s, layers);
      // Direct, captured, then replayed three times.
      for (int call = 0; call < 5; ++call) {
        const Outputs got = fused.run();
        ASSERT_EQ(got.size(), want.size());
        for (size_t o = 0; o < got.size(); ++o) {
          const std::string what = std::string("layer ") + std::to_string(o / 3) + " " + kOutputNames[o % 3] +
                                   ", call " + std::to_string(call);
          EXPECT_EQ(got[o], one_by_one[o]) << what << ": fused differs from one by one";
          if (o % 3 == 2) {
            EXPECT_EQ(strata::test::nmse_mismatch(what, want[o], got[o], dbl ? 1e-16 : 1e-10), "") << "vs the reference";
          } else {
            EXPECT_EQ(got[o], want[o]) << what << ": differs from the reference";
          }
        }
      }
    }
  }
}

}  // namespace
