// strata_bench_gpu_ops: the cuda plugin's decode-sized ops, one at a time, as microseconds per op and GB/s of weights.
//
// Every measurement is one compute() call holding many copies of one op (so the call's synchronization is spread
// over them), each copy reading its own weights (cycled through enough copies to exceed the GPU's caches). The
// plugin captures a repeated op list into a graph on its second call, so the first two calls are not timed; the
// rest are, best of several. Inputs live in device buffers from the backend's buffer_alloc (backend 1.1).
//
//   strata_bench_gpu_ops [--plugin NAME] [--seconds S] [--memory MiB] [--ops N] [--no-graphs] [--match TEXT]
//
// --match TEXT: only the single-op rows whose names contain TEXT (the sections of fused and grouped ops are left out).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "strata/format/fp16.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"

namespace {

using strata::format::GgmlType;
using Clock = std::chrono::steady_clock;

struct Settings {
  std::string plugin = "cuda";
  std::vector<std::string> plugin_options;
  double seconds = 1.0;        // timed calls per measurement, at least this long
  size_t memory = 512u << 20;  // bytes of weight copies per measurement (well past the GPU's last-level cache)
  int ops = 256;               // ops per compute call
  std::string match;           // run only the single-op rows whose names contain it (empty: everything)
};

bool wanted(const Settings& s, const std::string& name) { return s.match.empty() || name.find(s.match) != std::string::npos; }

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check(strata_status* st, const char* what) {
  if (st == nullptr) return;
  const auto [code, message] = strata::take_status(st);
  std::fprintf(stderr, "%s failed: %s: %s\n", what, strata::status_code_name(code), message.c_str());
  std::exit(1);
}

// A backend with device memory; frees what it allocated.
class Device {
 public:
  Device(const strata_backend_v1* be, void* ctx) : be_(be), ctx_(ctx) {}
  ~Device() {
    for (void* p : buffers_) be_->buffer_free(ctx_, 0, p);
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  void* alloc(size_t bytes) {
    void* p = nullptr;
    check(be_->buffer_alloc(ctx_, 0, bytes, STRATA_BUFFER_DEVICE, &p), "buffer_alloc");
    buffers_.push_back(p);
    return p;
  }
  void* upload(const void* host, size_t bytes) {
    void* p = alloc(bytes);
    check(be_->copy(ctx_, 0, p, host, bytes, STRATA_COPY_HOST_TO_DEVICE), "copy");
    return p;
  }
  template <class T>
  T* upload(const std::vector<T>& v) {
    return static_cast<T*>(upload(v.data(), v.size() * sizeof(T)));
  }
  // Seconds per op: the best of timed calls of `ops` (the first two calls, direct and captured, untimed).
  double time_per_op(const std::vector<strata_op>& ops, double seconds) {
    for (int i = 0; i < 2; ++i) check(be_->compute(ctx_, 0, ops.data(), ops.size()), "compute");
    double best = 1e30;
    const auto start = Clock::now();
    int calls = 0;
    do {
      const auto t0 = Clock::now();
      check(be_->compute(ctx_, 0, ops.data(), ops.size()), "compute");
      best = std::min(best, since(t0));
      ++calls;
    } while (since(start) < seconds || calls < 3);
    return best / static_cast<double>(ops.size());
  }

 private:
  const strata_backend_v1* be_;
  void* ctx_;
  std::vector<void*> buffers_;
};

// rows x n weights of `type`: a chunk of rows quantized from normal values by the format library, tiled, so
// scales and values look like a model's. F32 weights are the normal values themselves.
std::vector<unsigned char> weight_matrix(GgmlType type, int64_t rows, int64_t n, std::mt19937& rng) {
  const uint64_t rb = strata::format::row_bytes(type, static_cast<uint64_t>(n));
  const int64_t chunk_rows = std::min<int64_t>(rows, 64);
  std::vector<unsigned char> chunk(rb * static_cast<uint64_t>(chunk_rows));
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> f(static_cast<size_t>(n));
  for (int64_t r = 0; r < chunk_rows; ++r) {
    for (float& v : f) v = nd(rng);
    unsigned char* dst = chunk.data() + static_cast<uint64_t>(r) * rb;
    if (type == GgmlType::F32) {
      std::memcpy(dst, f.data(), rb);
    } else {
      strata::format::quantize_row(type, f.data(), dst, n);
    }
  }
  std::vector<unsigned char> w(rb * static_cast<uint64_t>(rows));
  for (size_t off = 0; off < w.size(); off += chunk.size()) {
    std::memcpy(w.data() + off, chunk.data(), std::min(chunk.size(), w.size() - off));
  }
  return w;
}

std::vector<float> normal_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

struct Result {
  double us_per_op;
  double gb_per_s;
};

// MUL_MAT of n_in x n_out weights of `type` for n_tok tokens.
Result bench_mul_mat(Device& dev, const Settings& s, GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
  std::mt19937 rng(7);
  const size_t one = strata::format::row_bytes(type, static_cast<uint64_t>(n_in)) * static_cast<uint64_t>(n_out);
  const size_t copies = std::clamp<size_t>(s.memory / one, 1, static_cast<size_t>(s.ops));
  auto* w = static_cast<unsigned char*>(dev.upload(weight_matrix(type, n_out * static_cast<int64_t>(copies), n_in, rng)));
  auto* x = dev.upload(normal_floats(static_cast<size_t>(n_in * n_tok), rng));
  auto* y = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(n_out * n_tok)));
  std::vector<strata_op> ops(static_cast<size_t>(s.ops));
  for (size_t i = 0; i < ops.size(); ++i) {
    strata_op& op = ops[i];
    op = strata_op{};
    op.struct_size = sizeof op;
    op.kind = STRATA_OP_MUL_MAT;
    op.src[0] = strata::make_tensor(w + (i % copies) * one, type, {n_in, n_out});
    op.src[1] = strata::tensor_f32(x, {n_in, n_tok});
    op.dst = strata::tensor_f32(y, {n_out, n_tok});
  }
  const double t = dev.time_per_op(ops, s.seconds);
  return {t * 1e6, static_cast<double>(one) / t / 1e9};
}

// MOE_ROUTED over n_expert experts (n_embd x n_ff gate and up of gate_up_type, down of down_type), k of them chosen
// at random per token, for n_tok tokens: GB/s of the chosen experts' bytes.
Result bench_moe_routed(Device& dev, const Settings& s, GgmlType gate_up_type, GgmlType down_type, uint32_t n_embd,
                        uint32_t n_ff, uint32_t n_expert, uint32_t k, uint32_t n_tok) {
  std::mt19937 rng(11);
  const size_t gu = strata::format::row_bytes(gate_up_type, n_embd) * n_ff;
  const size_t dn = strata::format::row_bytes(down_type, n_ff) * n_embd;
  auto* gate_up = static_cast<unsigned char*>(
      dev.upload(weight_matrix(gate_up_type, static_cast<int64_t>(2) * n_expert * n_ff, n_embd, rng)));
  auto* down = static_cast<unsigned char*>(dev.upload(weight_matrix(down_type, static_cast<int64_t>(n_expert) * n_embd, n_ff, rng)));
  std::vector<strata_expert_weights> ew(n_expert);
  for (uint32_t e = 0; e < n_expert; ++e) {
    ew[e] = {gate_up + 2 * e * gu, gate_up + (2 * e + 1) * gu, down + e * dn, static_cast<uint32_t>(gate_up_type),
             static_cast<uint32_t>(gate_up_type), static_cast<uint32_t>(down_type), 0};
  }
  static strata_expert_table table;  // outlives the ops (the plugin reads it at every call)
  table = {n_embd, n_ff, n_expert, static_cast<uint32_t>(gate_up_type), static_cast<uint32_t>(gate_up_type),
           static_cast<uint32_t>(down_type), dev.upload(ew), nullptr};
  // Per op: its own random choices (k distinct experts per token) and weights summing to about 1.
  const size_t n_ops = static_cast<size_t>(s.ops);
  std::vector<int32_t> ids(n_ops * k * n_tok);
  std::vector<float> weights(ids.size());
  std::vector<int32_t> all(n_expert);
  for (uint32_t e = 0; e < n_expert; ++e) all[e] = static_cast<int32_t>(e);
  std::uniform_real_distribution<float> ud(0.5f, 1.5f);
  for (size_t r = 0; r < n_ops * n_tok; ++r) {
    std::shuffle(all.begin(), all.end(), rng);
    for (uint32_t j = 0; j < k; ++j) {
      ids[r * k + j] = all[j];
      weights[r * k + j] = ud(rng) / static_cast<float>(k);
    }
  }
  auto* ids_d = dev.upload(ids);
  auto* weights_d = dev.upload(weights);
  auto* x = dev.upload(normal_floats(static_cast<size_t>(n_embd) * n_tok, rng));
  auto* y = static_cast<float*>(dev.alloc(sizeof(float) * n_embd * n_tok));
  std::vector<strata_op> ops(n_ops);
  for (size_t i = 0; i < n_ops; ++i) {
    strata_op& op = ops[i];
    op = strata_op{};
    op.struct_size = sizeof op;
    op.kind = STRATA_OP_MOE_ROUTED;
    op.extra = &table;
    op.src[0] = strata::tensor_f32(x, {n_embd, n_tok});
    op.src[1] = strata::tensor_i32(ids_d + i * k * n_tok, {k, n_tok});
    op.src[2] = strata::tensor_f32(weights_d + i * k * n_tok, {k, n_tok});
    op.dst = strata::tensor_f32(y, {n_embd, n_tok});
  }
  const double t = dev.time_per_op(ops, s.seconds);
  // Distinct experts read per op: k per token at most, fewer when tokens share experts (n_tok 1 here: k).
  const double bytes = static_cast<double>(std::min<uint32_t>(k * n_tok, n_expert)) * static_cast<double>(2 * gu + dn);
  return {t * 1e6, bytes / t / 1e9};
}

// ATTENTION of qwen3-30b-a3b's shape (32 q heads over 4 kv heads of 128) over an f16 cache of `capacity` columns,
// n_tok tokens at positions first .. first + n_tok - 1: microseconds per op (no weights: GB/s is left 0). Every op
// reads the same caches (the decode window's keys and values stay in the GPU's cache, as in a model's layer).
Result bench_attention(Device& dev, const Settings& s, int64_t capacity, int64_t first, int64_t n_tok) {
  constexpr int64_t head_dim = 128, n_head = 32, n_kv_head = 4;
  std::mt19937 rng(13);
  std::normal_distribution<float> nd;
  std::vector<uint16_t> cache(static_cast<size_t>(head_dim * n_kv_head * capacity));
  for (uint16_t& x : cache) x = strata::format::fp32_to_fp16(nd(rng));
  auto* k = dev.upload(cache);
  for (uint16_t& x : cache) x = strata::format::fp32_to_fp16(nd(rng));
  auto* v = dev.upload(cache);
  auto* q = dev.upload(normal_floats(static_cast<size_t>(head_dim * n_head * n_tok), rng));
  std::vector<int32_t> pos(static_cast<size_t>(n_tok));
  for (int64_t t = 0; t < n_tok; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(first + t);
  auto* pos_d = dev.upload(pos);
  auto* y = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(head_dim * n_head * n_tok)));
  // Prefill ops take milliseconds: fewer per call.
  std::vector<strata_op> ops(static_cast<size_t>(n_tok > 1 ? std::min(s.ops, 16) : s.ops));
  for (strata_op& op : ops) {
    op = strata_op{};
    op.struct_size = sizeof op;
    op.kind = STRATA_OP_ATTENTION;
    op.src[0] = strata::tensor_f32(q, {head_dim, n_head, n_tok});
    op.src[1] = strata::make_tensor(k, GgmlType::F16, {head_dim * n_kv_head, capacity});
    op.src[2] = strata::make_tensor(v, GgmlType::F16, {head_dim * n_kv_head, capacity});
    op.src[3] = strata::tensor_i32(pos_d, {n_tok});
    op.dst = strata::tensor_f32(y, {head_dim * n_head, n_tok});
    op.i[0] = static_cast<int32_t>(n_head);
    op.i[1] = static_cast<int32_t>(n_kv_head);
    op.f[0] = 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
  return {dev.time_per_op(ops, s.seconds) * 1e6, 0.0};
}

void print_row(const std::string& what, const Result& r) {
  std::printf("| %s | %.2f | %.0f |\n", what.c_str(), r.us_per_op, r.gb_per_s);
  std::fflush(stdout);
}

// The prefill shapes of the tiled products (a 512-token window): qwen3-30b-a3b's q projection and a Q6_K down
// matrix with 630-byte rows (2-byte aligned: the unaligned copy path), then both MoE layer kinds.
void bench_prefill_products(const strata_backend_v1* be, void* ctx, const Settings& s) {
  struct MulMat {
    GgmlType type;
    int64_t n_in, n_out;
  };
  for (const MulMat& m : {MulMat{GgmlType::Q4_K, 2048, 4096}, MulMat{GgmlType::Q6_K, 768, 2048}}) {
    const std::string name = "MUL_MAT " + std::string(strata::format::traits(m.type).name) + " " +
                             std::to_string(m.n_in) + "x" + std::to_string(m.n_out) + ", 512 tokens";
    if (!wanted(s, name)) continue;
    Device dev(be, ctx);
    print_row(name, bench_mul_mat(dev, s, m.type, m.n_in, m.n_out, 512));
  }
  for (GgmlType down : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const std::string name = "MOE_ROUTED q4_K/" + std::string(strata::format::traits(down).name) +
                             " 2048/768, 128 experts, k 8, 512 tokens";
    if (!wanted(s, name)) continue;
    Device dev(be, ctx);
    print_row(name, bench_moe_routed(dev, s, GgmlType::Q4_K, down, 2048, 768, 128, 8, 512));
  }
}

// ROUTER for the decode shapes: qwen3's 128 experts (softmax, k 8, normalised) and a 256-expert sigmoid router
// with a selection bias, one token; the logits of successive ops differ so no op reads another's output.
void bench_router(const strata_backend_v1* be, void* ctx, const Settings& s) {
  struct Shape {
    int64_t n_expert, k;
    int gating;
    bool bias;
  };
  for (const Shape& sh : {Shape{128, 8, 0, false}, Shape{256, 8, 1, true}}) {
    Device dev(be, ctx);
    std::mt19937 rng(13);
    const auto n_ops = static_cast<size_t>(s.ops);
    auto* l = static_cast<float*>(dev.upload(normal_floats(static_cast<size_t>(sh.n_expert) * n_ops, rng)));
    auto* b = sh.bias ? dev.upload(normal_floats(static_cast<size_t>(sh.n_expert), rng)) : nullptr;
    auto* ids = static_cast<int32_t*>(dev.alloc(sizeof(int32_t) * static_cast<size_t>(sh.k)));
    auto* w = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(sh.k)));
    std::vector<strata_op> ops(n_ops);
    for (size_t i = 0; i < n_ops; ++i) {
      strata_op& op = ops[i];
      op = strata_op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_ROUTER;
      op.src[0] = strata::tensor_f32(l + i * static_cast<size_t>(sh.n_expert), {sh.n_expert, 1});
      op.src[1] = b != nullptr ? strata::tensor_f32(b, {sh.n_expert}) : strata::no_tensor();
      op.src[2] = strata::tensor_f32(w, {sh.k, 1});
      op.dst = strata::tensor_i32(ids, {sh.k, 1});
      op.i[0] = static_cast<int32_t>(sh.k);
      op.i[1] = sh.gating;
      op.i[2] = 1;
      op.f[0] = 1.0f;
    }
    const double t = dev.time_per_op(ops, s.seconds);
    print_row("ROUTER " + std::to_string(sh.n_expert) + " experts, k " + std::to_string(sh.k) +
                  (sh.gating == 0 ? ", softmax" : ", sigmoid + bias") + ", 1 token",
              {t * 1e6, 0.0});
  }
}

// The plugin instance a fused-against-one-by-one comparison runs on: the run's options, plus fuse=false for the
// one-by-one side.
std::unique_ptr<strata::PluginInstance> instance_with_fuse(const strata::PluginRegistry& registry, const Settings& s,
                                                           bool fuse) {
  std::vector<std::string> options = s.plugin_options;
  if (!fuse) options.push_back("fuse=false");
  return registry.instantiate(s.plugin, options);
}

// The router of a qwen3-30b-a3b layer at one token, as fuse_router.cu fuses it: MUL_MAT of the f32 router weight
// (2048 -> 128 logits) then ROUTER (softmax, k 8, normalised), timed with fuse=true and fuse=false (a plugin
// instance each); every pair reads its own weight copy (cycled past the GPU's caches). Prints us per pair.
void bench_router_fused(const strata::PluginRegistry& registry, const Settings& s) {
  constexpr int64_t n_in = 2048, n_expert = 128, k = 8;
  for (const bool fuse : {true, false}) {
    auto inst = instance_with_fuse(registry, s, fuse);
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    Device dev(be, inst->ctx());
    std::mt19937 rng(13);
    const size_t pairs = static_cast<size_t>(std::max(1, s.ops / 2));
    const size_t one = sizeof(float) * static_cast<size_t>(n_in * n_expert);
    const size_t copies = std::clamp<size_t>(s.memory / one, 1, pairs);
    auto* w = static_cast<unsigned char*>(
        dev.upload(weight_matrix(GgmlType::F32, n_expert * static_cast<int64_t>(copies), n_in, rng)));
    auto* x = dev.upload(normal_floats(static_cast<size_t>(n_in), rng));
    auto* logits = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(n_expert)));
    auto* ids = static_cast<int32_t*>(dev.alloc(sizeof(int32_t) * static_cast<size_t>(k)));
    auto* weights = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(k)));
    std::vector<strata_op> ops;
    for (size_t i = 0; i < pairs; ++i) {
      strata_op mm{};
      mm.struct_size = sizeof mm;
      mm.kind = STRATA_OP_MUL_MAT;
      mm.src[0] = strata::make_tensor(w + (i % copies) * one, GgmlType::F32, {n_in, n_expert});
      mm.src[1] = strata::tensor_f32(x, {n_in, 1});
      mm.dst = strata::tensor_f32(logits, {n_expert, 1});
      ops.push_back(mm);
      strata_op route{};
      route.struct_size = sizeof route;
      route.kind = STRATA_OP_ROUTER;
      route.src[0] = mm.dst;
      route.src[1] = strata::no_tensor();
      route.src[2] = strata::tensor_f32(weights, {k, 1});
      route.dst = strata::tensor_i32(ids, {k, 1});
      route.i[0] = static_cast<int32_t>(k);
      route.i[2] = 1;
      route.f[0] = 1.0f;
      ops.push_back(route);
    }
    const double t = 2.0 * dev.time_per_op(ops, s.seconds);
    print_row(std::string("MUL_MAT f32 2048x128 + ROUTER 128 k 8, ") + (fuse ? "fused" : "one by one"),
              {t * 1e6, static_cast<double>(one) / t / 1e9});
  }
}

// The ceiling decode is measured against: device-to-device copies of 2 GiB (each byte read once and written
// once), best of several, as GB/s of bytes read.
void bench_device_copy(const strata_backend_v1* be, void* ctx) {
  const uint64_t bytes = uint64_t{2} << 30;
  void* a = nullptr;
  void* b = nullptr;
  check(be->buffer_alloc(ctx, 0, bytes, STRATA_BUFFER_DEVICE, &a), "buffer_alloc");
  check(be->buffer_alloc(ctx, 0, bytes, STRATA_BUFFER_DEVICE, &b), "buffer_alloc");
  double best = 1e30;
  for (int rep = 0; rep < 8; ++rep) {
    const auto t0 = Clock::now();
    check(be->copy(ctx, 0, b, a, bytes, STRATA_COPY_DEVICE_TO_DEVICE), "copy");
    if (rep > 0) best = std::min(best, since(t0));
  }
  be->buffer_free(ctx, 0, a);
  be->buffer_free(ctx, 0, b);
  print_row("device copy 2 GiB (HBM: GB/s read, as many written)", {best * 1e6, static_cast<double>(bytes) / best / 1e9});
}

// q, k and v of one layer: three one-token MUL_MATs over the same src1 (2048 -> 4096 + 512 + 512), which the
// plugin may run as one grouped launch; v of q4_K or of q6_K (as q4_K_M files have in some layers). Prints us per
// group of three and GB/s of the three matrices.
void bench_matvec_groups(const strata_backend_v1* be, void* ctx, const Settings& s) {
  for (GgmlType v_type : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    Device dev(be, ctx);
    std::mt19937 rng(13);
    const int64_t n_in = 2048, out_rows[3] = {4096, 512, 512};
    const GgmlType types[3] = {GgmlType::Q4_K, GgmlType::Q4_K, v_type};
    const int groups = std::max(1, s.ops / 3);
    size_t group_bytes = 0;
    for (int m = 0; m < 3; ++m) group_bytes += strata::format::row_bytes(types[m], n_in) * static_cast<size_t>(out_rows[m]);
    const size_t copies = std::clamp<size_t>(s.memory / group_bytes, 1, static_cast<size_t>(groups));
    unsigned char* w[3];
    size_t one[3];
    for (int m = 0; m < 3; ++m) {
      one[m] = strata::format::row_bytes(types[m], n_in) * static_cast<size_t>(out_rows[m]);
      w[m] = static_cast<unsigned char*>(
          dev.upload(weight_matrix(types[m], out_rows[m] * static_cast<int64_t>(copies), n_in, rng)));
    }
    auto* x = dev.upload(normal_floats(static_cast<size_t>(n_in), rng));
    float* y[3];
    for (int m = 0; m < 3; ++m) y[m] = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(out_rows[m])));
    std::vector<strata_op> ops(static_cast<size_t>(3 * groups));
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t g = i / 3, m = i % 3;
      strata_op& op = ops[i];
      op = strata_op{};
      op.struct_size = sizeof op;
      op.kind = STRATA_OP_MUL_MAT;
      op.src[0] = strata::make_tensor(w[m] + (g % copies) * one[m], types[m], {n_in, out_rows[m]});
      op.src[1] = strata::tensor_f32(x, {n_in, 1});
      op.dst = strata::tensor_f32(y[m], {out_rows[m], 1});
    }
    const double t = 3.0 * dev.time_per_op(ops, s.seconds);
    const std::string name = "MUL_MAT q/k/v q4_K/q4_K/" + std::string(strata::format::traits(v_type).name) +
                             " 2048 -> 4096+512+512, 1 token (per group)";
    print_row(name, {t * 1e6, static_cast<double>(group_bytes) / t / 1e9});
  }
}

// The op runs fusions.cu replaces, per layer of qwen3-30b-a3b at one token, timed with fuse=true and fuse=false
// (a plugin instance each): q/k head norms, ropes and the two f16 KV stores (32 q heads, 4 kv heads of 128); the
// residual ADD, RMS_NORM of 2048 and the q4_K MUL_MAT (2048 x 512) that reads the normed row.
void bench_fusions(const strata::PluginRegistry& registry, const Settings& s) {
  for (const bool fuse : {true, false}) {
    auto inst = instance_with_fuse(registry, s, fuse);
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    Device dev(be, inst->ctx());
    std::mt19937 rng(13);
    const int64_t hd = 128, n_head = 32, n_kv = 4, n_ctx = 4096, n_embd = 2048;
    auto* q = dev.upload(normal_floats(static_cast<size_t>(hd * n_head), rng));
    auto* q_alt = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(hd * n_head)));
    auto* k = dev.upload(normal_floats(static_cast<size_t>(hd * n_kv), rng));
    auto* k_alt = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(hd * n_kv)));
    auto* v = dev.upload(normal_floats(static_cast<size_t>(hd * n_kv), rng));
    auto* q_norm = dev.upload(normal_floats(static_cast<size_t>(hd), rng));
    auto* k_norm = dev.upload(normal_floats(static_cast<size_t>(hd), rng));
    auto* pos = dev.upload(std::vector<int32_t>{517});
    auto* keys = dev.alloc(2 * static_cast<size_t>(hd * n_kv * n_ctx));
    auto* values = dev.alloc(2 * static_cast<size_t>(hd * n_kv * n_ctx));
    const auto op_of = [](strata_op_kind kind) {
      strata_op op{};
      op.struct_size = sizeof op;
      op.kind = kind;
      return op;
    };
    std::vector<strata_op> head;
    while (head.size() + 6 <= static_cast<size_t>(std::max(s.ops, 6))) {
      for (const auto& [x, alt, heads, w] : {std::tuple{q, q_alt, n_head, q_norm}, std::tuple{k, k_alt, n_kv, k_norm}}) {
        strata_op norm = op_of(STRATA_OP_RMS_NORM);
        norm.src[0] = strata::tensor_f32(x, {hd, heads, 1});
        norm.src[1] = strata::tensor_f32(w, {hd});
        norm.dst = strata::tensor_f32(alt, {hd, heads, 1});
        norm.f[0] = 1e-6f;
        head.push_back(norm);
        strata_op rope = op_of(STRATA_OP_ROPE);
        rope.src[0] = norm.dst;
        rope.src[1] = strata::tensor_i32(pos, {1});
        rope.dst = norm.src[0];
        rope.i[0] = 2;
        rope.i[1] = static_cast<int32_t>(hd);
        rope.f[0] = 1e6f;
        rope.f[1] = 1.0f;
        head.push_back(rope);
      }
      for (const auto& [cache, x] : {std::pair{keys, k}, std::pair{values, v}}) {
        strata_op store = op_of(STRATA_OP_KV_STORE);
        store.src[0] = strata::tensor_f32(x, {hd * n_kv, 1});
        store.src[1] = strata::tensor_i32(pos, {1});
        store.dst = strata::make_tensor(cache, GgmlType::F16, {hd * n_kv, n_ctx});
        head.push_back(store);
      }
    }
    const char* mode = fuse ? "fused" : "one by one";
    print_row(std::string("head prep: RMS_NORM+ROPE q 32x128, k 4x128, KV_STORE k, v (6 ops), ") + mode,
              {dev.time_per_op(head, s.seconds) * 6e6, 0.0});

    auto* x = dev.upload(normal_floats(static_cast<size_t>(n_embd), rng));
    auto* out = dev.upload(normal_floats(static_cast<size_t>(n_embd), rng));
    auto* xn = static_cast<float*>(dev.alloc(sizeof(float) * static_cast<size_t>(n_embd)));
    auto* w = dev.upload(normal_floats(static_cast<size_t>(n_embd), rng));
    auto* wk = dev.upload(weight_matrix(GgmlType::Q4_K, 512, n_embd, rng));
    auto* y = static_cast<float*>(dev.alloc(sizeof(float) * 512));
    std::vector<strata_op> layer;
    while (layer.size() + 3 <= static_cast<size_t>(std::max(s.ops, 3))) {
      strata_op add = op_of(STRATA_OP_ADD);
      add.src[0] = strata::tensor_f32(x, {n_embd, 1});
      add.src[1] = strata::tensor_f32(out, {n_embd, 1});
      add.dst = add.src[0];
      layer.push_back(add);
      strata_op norm = op_of(STRATA_OP_RMS_NORM);
      norm.src[0] = add.dst;
      norm.src[1] = strata::tensor_f32(w, {n_embd});
      norm.dst = strata::tensor_f32(xn, {n_embd, 1});
      norm.f[0] = 1e-6f;
      layer.push_back(norm);
      strata_op mm = op_of(STRATA_OP_MUL_MAT);
      mm.src[0] = strata::make_tensor(wk, GgmlType::Q4_K, {n_embd, 512});
      mm.src[1] = norm.dst;
      mm.dst = strata::tensor_f32(y, {512, 1});
      layer.push_back(mm);
    }
    print_row(std::string("ADD + RMS_NORM 2048 + MUL_MAT q4_K 2048x512 (3 ops), ") + mode,
              {dev.time_per_op(layer, s.seconds) * 3e6, 0.0});
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--plugin" && i + 1 < argc) {
      s.plugin = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      s.seconds = std::atof(argv[++i]);
    } else if (a == "--memory" && i + 1 < argc) {
      s.memory = static_cast<size_t>(std::atof(argv[++i]) * 1048576.0);
    } else if (a == "--ops" && i + 1 < argc) {
      s.ops = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--no-graphs") {
      s.plugin_options.push_back("graphs=false");
    } else if (a == "--match" && i + 1 < argc) {
      s.match = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--plugin NAME] [--seconds S] [--memory MiB] [--ops N] [--no-graphs] [--match TEXT]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    // The build's plugin folder, this executable's folder (a packed copy on another machine), STRATA_PLUGIN_PATH.
    const char* env = std::getenv("STRATA_PLUGIN_PATH");
    strata::PluginRegistry registry(strata::default_search_path({}, env != nullptr ? env : ""));
    auto inst = registry.instantiate(s.plugin, s.plugin_options);
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    if (be == nullptr || be->header.minor < 1 || be->buffer_alloc == nullptr || be->device_count(inst->ctx()) == 0) {
      std::fprintf(stderr, "plugin %s has no device with its own memory (backend 1.1)\n", s.plugin.c_str());
      return 1;
    }
    const auto devs = inst->devices();
    std::printf("%s on %s (%s), %d ops per call\n\n", s.plugin.c_str(), devs.at(0).name.c_str(),
                devs.at(0).arch.c_str(), s.ops);
    std::printf("| op | us per op | GB/s (weights) |\n| --- | ---: | ---: |\n");
    bench_device_copy(be, inst->ctx());
    struct MulMat {
      GgmlType type;
      int64_t n_in, n_out;
    };
    // qwen3-30b-a3b's decode products, then glm-4.5-air's (n_embd 4096, 96 q heads and 8 kv heads of 128, experts
    // of 1408 rows whose down rows are Q5_0 or Q8_0 under llama.cpp's Q4_K_M, an f32 router of 4096 x 128).
    for (const MulMat& m : {MulMat{GgmlType::Q4_K, 2048, 4096}, MulMat{GgmlType::Q4_K, 4096, 2048},
                            MulMat{GgmlType::Q4_K, 2048, 512}, MulMat{GgmlType::Q6_K, 2048, 512},
                            MulMat{GgmlType::Q6_K, 2048, 151936}, MulMat{GgmlType::F32, 2048, 128},
                            MulMat{GgmlType::Q4_K, 4096, 12288}, MulMat{GgmlType::Q4_K, 12288, 4096},
                            MulMat{GgmlType::Q4_K, 4096, 1024}, MulMat{GgmlType::Q4_K, 4096, 1408},
                            MulMat{GgmlType::Q5_0, 1408, 4096}, MulMat{GgmlType::F32, 4096, 128}}) {
      const std::string name = "MUL_MAT " + std::string(strata::format::traits(m.type).name) + " " +
                               std::to_string(m.n_in) + "x" + std::to_string(m.n_out) + ", 1 token";
      if (!wanted(s, name)) continue;
      Device dev(be, inst->ctx());
      print_row(name, bench_mul_mat(dev, s, m.type, m.n_in, m.n_out, 1));
    }
    struct Moe {
      GgmlType down;
      uint32_t n_embd, n_ff;
    };
    for (const Moe& m : {Moe{GgmlType::Q4_K, 2048, 768}, Moe{GgmlType::Q6_K, 2048, 768}, Moe{GgmlType::Q5_0, 4096, 1408},
                         Moe{GgmlType::Q8_0, 4096, 1408}}) {
      const std::string name = "MOE_ROUTED q4_K/" + std::string(strata::format::traits(m.down).name) + " " +
                               std::to_string(m.n_embd) + "/" + std::to_string(m.n_ff) + ", 128 experts, k 8, 1 token";
      if (!wanted(s, name)) continue;
      Device dev(be, inst->ctx());
      print_row(name, bench_moe_routed(dev, s, GgmlType::Q4_K, m.down, m.n_embd, m.n_ff, 128, 8, 1));
    }
    bench_prefill_products(be, inst->ctx(), s);  // single-op rows: --match picks among them
    if (s.match.empty()) {
      bench_matvec_groups(be, inst->ctx(), s);
      bench_router(be, inst->ctx(), s);
      bench_router_fused(registry, s);
    }
    // Decode at the long-context test's depth too (capacity 17408: bench -d 16384 with runtime.context 17408).
    for (int64_t capacity : {int64_t{4096}, int64_t{32768}, int64_t{17408}}) {
      for (int64_t ctx : {int64_t{128}, int64_t{512}, int64_t{2048}, int64_t{8192}, int64_t{16384}}) {
        if (ctx > capacity || (capacity == 17408) != (ctx == 16384)) continue;
        const std::string name = "ATTENTION f16 32/4x128, cache " + std::to_string(capacity) + ", 1 token at " + std::to_string(ctx);
        if (!wanted(s, name)) continue;
        Device dev(be, inst->ctx());
        print_row(name, bench_attention(dev, s, capacity, ctx - 1, 1));
      }
      const std::string name = "ATTENTION f16 32/4x128, cache " + std::to_string(capacity) + ", 512 tokens at 0..511";
      if (capacity == 17408 || !wanted(s, name)) continue;
      Device dev(be, inst->ctx());
      print_row(name, bench_attention(dev, s, capacity, 0, 512));
    }
    if (s.match.empty()) bench_fusions(registry, s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata_bench_gpu_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
