// strata_bench_cpu_kernels: how close cpu_avx2's kernels come to the machine's memory read bandwidth.
//
// Measures, in one process: the read bandwidth of a plain multi-threaded sum over a buffer much larger than the
// caches (as many threads as the plugin has parts), MUL_MAT on Q4_K, Q6_K and Q8_0 weights of realistic sizes for
// 1, 8 and 64 tokens (and on the big models' expert types: IQ2_XS, MXFP4, the i-quants, Q2_K, Q3_K), and the expert pool on 1 token x 8, 2 and 1 experts of 768x2048 Q4_K (also with the calls 1 ms
// apart, as decode makes them, and each case's best call in microseconds). Weights are cycled through enough copies
// to exceed the caches, so every figure is a memory-bound rate: weight bytes read per second.
//
//   strata_bench_cpu_kernels [--workers N] [--spin-us US] [--force-avx2] [--gathers auto|true|false] [--seconds S]
//                            [--memory MiB] [--match TEXT]
//
// A small --memory (a few MiB) keeps the weights in the caches: then the figures measure the kernels' compute
// rate rather than the memory's (with --workers 0, one core's).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
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
  std::vector<std::string> plugin_options;
  double seconds = 1.0;        // per measurement
  size_t memory = 1024u << 20;  // bytes of weight copies per measurement (well past the last-level cache)
  std::string match;            // only measurements whose name contains this
};

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

__attribute__((target("avx2"))) uint64_t sum_bytes(const unsigned char* p, size_t n) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
  for (size_t i = 0; i + 64 <= n; i += 64) {
    acc0 = _mm256_add_epi64(acc0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    acc1 = _mm256_add_epi64(acc1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(acc0, acc1));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// Best of a few passes of `threads` threads each reading its slice of `bytes`.
double read_bandwidth(unsigned threads, size_t bytes, double seconds) {
  std::vector<unsigned char> buf(bytes);
  for (size_t i = 0; i < bytes; i += 4096) buf[i] = static_cast<unsigned char>(i >> 12);
  std::atomic<uint64_t> sink{0};
  double best = 0.0;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        const size_t b = bytes / threads * t, e = t + 1 == threads ? bytes : bytes / threads * (t + 1);
        sink += sum_bytes(buf.data() + b, e - b);
      });
    }
    for (auto& t : ts) t.join();
    best = std::max(best, static_cast<double>(bytes) / since(t0));
  } while (since(start) < seconds);
  return best;
}

// rows x n weights of `type` (F32, F16, MXFP4, an i-quant but IQ1_M and IQ4_NL, or a type quantize_row writes): a chunk of real quantized rows (normal values through the format library's
// quantizer), tiled, so scales and values look like a model's.
std::vector<unsigned char> quantized_matrix(GgmlType type, int64_t rows, int64_t n, std::mt19937& rng) {
  const uint64_t rb = strata::format::row_bytes(type, static_cast<uint64_t>(n));
  const int64_t chunk_rows = std::min<int64_t>(rows, 64);
  std::vector<unsigned char> chunk(rb * static_cast<uint64_t>(chunk_rows));
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> f(static_cast<size_t>(n));
  for (int64_t r = 0; r < chunk_rows; ++r) {
    for (float& v : f) v = nd(rng);
    unsigned char* dst = chunk.data() + static_cast<uint64_t>(r) * rb;
    if (type == GgmlType::F32) {
      std::memcpy(dst, f.data(), rb);  // the router's float weights
    } else if (type == GgmlType::F16) {
      for (int64_t i = 0; i < n; ++i) {  // the vision projector's matrices
        const uint16_t h = strata::format::fp32_to_fp16(f[static_cast<size_t>(i)]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else if (type == GgmlType::MXFP4 || type == GgmlType::IQ2_XXS || type == GgmlType::IQ2_XS ||
               type == GgmlType::IQ2_S || type == GgmlType::IQ3_XXS || type == GgmlType::IQ3_S ||
               type == GgmlType::IQ1_S || type == GgmlType::IQ4_XS) {
      // No quantizer for these: random blocks with a sane scale (the i-quants: f16 d first; MXFP4: an exponent
      // near 2^-8 first). Speed does not depend on the values.
      const auto& tr = strata::format::traits(type);
      std::uniform_int_distribution<int> byte(0, 255);
      for (uint64_t i = 0; i < rb; ++i) dst[i] = static_cast<unsigned char>(byte(rng));
      for (uint64_t b = 0; b < rb; b += tr.block_bytes) {
        if (type == GgmlType::MXFP4) {
          dst[b] = static_cast<unsigned char>(115 + byte(rng) % 12);
        } else {
          const uint16_t h = strata::format::fp32_to_fp16(0.002f);
          std::memcpy(dst + b, &h, 2);
        }
      }
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

struct Backend {
  const strata_backend_v1* backend;
  const strata_expert_pool_v1* pool;
  void* ctx;
  unsigned parts;
  std::string arch;
};

void check(strata_status* st, const char* what) {
  if (st == nullptr) return;
  const auto [code, message] = strata::take_status(st);
  std::fprintf(stderr, "%s failed: %s: %s\n", what, strata::status_code_name(code), message.c_str());
  std::exit(1);
}

// MUL_MAT of n_in x n_out weights of `type` for n_tok tokens: GB/s of weight bytes.
double bench_mul_mat(const Backend& be, const Settings& s, GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
  std::mt19937 rng(7);
  const size_t one = strata::format::row_bytes(type, static_cast<uint64_t>(n_in)) * static_cast<uint64_t>(n_out);
  const size_t copies = std::max<size_t>(1, s.memory / one);
  std::vector<unsigned char> w = quantized_matrix(type, n_out * static_cast<int64_t>(copies), n_in, rng);
  std::vector<float> x(static_cast<size_t>(n_in * n_tok)), y(static_cast<size_t>(n_out * n_tok));
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = STRATA_OP_MUL_MAT;
  op.src[1] = strata::tensor_f32(x.data(), {n_in, n_tok});
  op.dst = strata::tensor_f32(y.data(), {n_out, n_tok});
  const auto start = Clock::now();
  double best = 0.0;
  do {
    // One pass over all copies (cold in the caches), timed as a whole.
    const auto t0 = Clock::now();
    for (size_t c = 0; c < copies; ++c) {
      op.src[0] = strata::make_tensor(w.data() + c * one, type, {n_in, n_out});
      check(be.backend->compute(be.ctx, 0, &op, 1), "MUL_MAT");
    }
    best = std::max(best, static_cast<double>(one * copies) / since(t0));
  } while (since(start) < s.seconds);
  return best;
}

// The expert pool on n_tok tokens x n_exp experts (n_embd x n_ff, all three matrices of `type`), chosen at random
// among enough experts to exceed the caches: GB/s of expert bytes read, and the best call's time in *call_us. With
// `gap_us`, the calls are that far apart (the workers may fall asleep between them, as in a decode step whose
// other layers have no CPU experts); the gaps are not counted.
double bench_pool(const Backend& be, const Settings& s, GgmlType type, uint32_t n_embd, uint32_t n_ff, uint32_t n_tok,
                  uint32_t n_exp, uint32_t gap_us, double* call_us) {
  std::mt19937 rng(11);
  const size_t mat = strata::format::row_bytes(type, n_embd) * n_ff;
  const size_t n_total = std::max<size_t>(16, s.memory / (3 * mat));
  std::vector<unsigned char> w = quantized_matrix(type, static_cast<int64_t>(3 * n_total * n_ff), n_embd, rng);
  std::vector<float> x(static_cast<size_t>(n_embd) * n_tok), rows(static_cast<size_t>(n_embd) * n_exp * n_tok);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  std::vector<uint32_t> ids(n_exp), offsets(n_exp + 1), index;
  std::vector<float> route;
  for (uint32_t e = 0; e < n_exp; ++e) {
    offsets[e] = e * n_tok;
    for (uint32_t t = 0; t < n_tok; ++t) index.push_back(t), route.push_back(0.125f);
  }
  offsets[n_exp] = n_exp * n_tok;
  std::vector<strata_expert_weights> ew(n_exp);
  strata_moe_op m{};
  m.n_embd = n_embd;
  m.n_ff = n_ff;
  m.n_tok = n_tok;
  m.n_experts = n_exp;
  m.expert_ids = ids.data();
  m.weights = ew.data();
  m.token_offsets = offsets.data();
  m.token_index = index.data();
  m.route_weight = route.data();
  m.x = x.data();
  m.rows = rows.data();
  std::vector<uint32_t> all(n_total);
  for (uint32_t i = 0; i < n_total; ++i) all[i] = i;
  const size_t per_call = n_exp * 3 * mat;
  const size_t calls = std::max<size_t>(1, n_total / n_exp);
  double best = 0.0, best_call = 1e9;
  const auto start = Clock::now();
  do {
    double busy = 0.0;
    for (size_t c = 0; c < calls; ++c) {
      if (gap_us > 0) {
        const auto until = Clock::now() + std::chrono::microseconds(gap_us);
        while (Clock::now() < until) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      std::shuffle(all.begin(), all.end(), rng);
      std::sort(all.begin(), all.begin() + n_exp);
      for (uint32_t e = 0; e < n_exp; ++e) {
        ids[e] = all[e];
        const unsigned char* base = w.data() + static_cast<size_t>(all[e]) * 3 * mat;
        ew[e] = {base, base + mat, base + 2 * mat, static_cast<uint32_t>(type), static_cast<uint32_t>(type),
                 static_cast<uint32_t>(type), 0};
      }
      volatile uint32_t flag = 0;
      const auto t0 = Clock::now();
      check(be.pool->compute(be.ctx, &m, &flag, 1), "expert_pool.compute");
      const double took = since(t0);
      busy += took;
      best_call = std::min(best_call, took);
    }
    best = std::max(best, static_cast<double>(per_call * calls) / busy);
  } while (since(start) < s.seconds);
  *call_us = 1e6 * best_call;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workers" && i + 1 < argc) {
      s.plugin_options.push_back(std::string("workers=") + argv[++i]);
    } else if (a == "--spin-us" && i + 1 < argc) {
      s.plugin_options.push_back(std::string("spin_us=") + argv[++i]);
    } else if (a == "--force-avx2") {
      s.plugin_options.push_back("force_avx2=true");
    } else if (a == "--gathers" && i + 1 < argc) {
      s.plugin_options.push_back(std::string("gathers=") + argv[++i]);
    } else if (a == "--seconds" && i + 1 < argc) {
      s.seconds = std::atof(argv[++i]);
    } else if (a == "--match" && i + 1 < argc) {
      s.match = argv[++i];
    } else if (a == "--memory" && i + 1 < argc) {
      s.memory = static_cast<size_t>(std::atof(argv[++i]) * 1048576.0);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--workers N] [--spin-us US] [--force-avx2] [--gathers auto|true|false] [--seconds S] "
                   "[--memory MiB] [--match TEXT]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    // The build's plugin folder, this executable's folder (a packed copy on another machine), STRATA_PLUGIN_PATH.
    const char* env = std::getenv("STRATA_PLUGIN_PATH");
    strata::PluginRegistry registry(strata::default_search_path({}, env != nullptr ? env : ""));
    auto inst = registry.instantiate("cpu_avx2", s.plugin_options);
    Backend be{inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION),
               inst->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION), inst->ctx(),
               0, ""};
    const auto devs = inst->devices();
    be.parts = devs.at(0).compute_units;
    be.arch = devs.at(0).arch;
    std::printf("cpu_avx2 on %s: %s, %u threads\n\n", devs.at(0).name.c_str(), be.arch.c_str(), be.parts);
    const double read = read_bandwidth(be.parts, std::max<size_t>(s.memory, 256u << 20), s.seconds);
    std::printf("| measurement | GB/s | of read bandwidth |\n| --- | ---: | ---: |\n");
    std::printf("| plain read, %u threads | %.1f | 100%% |\n", be.parts, read / 1e9);
    const auto report = [&](const std::string& name, auto measure) {
      if (name.find(s.match) == std::string::npos) return;
      const double r = measure();
      std::printf("| %s | %.1f | %.0f%% |\n", name.c_str(), r / 1e9, 100.0 * r / read);
      std::fflush(stdout);
    };
    struct Shape {
      GgmlType type;
      int64_t n_in, n_out;
    };
    // The model shapes of a 30B-A3B MoE decode: experts (2048x768, 768x2048), attention (2048x4096, 4096x2048,
    // 2048x512), the router (F32 2048x128) and the output head (2048x151936).
    std::vector<Shape> shapes;
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
      for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{2048, 768}, {768, 2048}, {2048, 512}, {2048, 151936}}) {
        shapes.push_back({t, n_in, n_out});
      }
    }
    shapes.push_back({GgmlType::Q4_K, 2048, 4096});
    shapes.push_back({GgmlType::Q4_K, 4096, 2048});
    shapes.push_back({GgmlType::F32, 2048, 128});
    // The experts the pool computes for the big models: Qwen3-235B's 2-bit recipe (4096x1536, 1536x4096) and
    // gpt-oss's MXFP4 (2880x2880).
    shapes.push_back({GgmlType::IQ2_XS, 4096, 1536});
    shapes.push_back({GgmlType::IQ2_XS, 1536, 4096});
    shapes.push_back({GgmlType::MXFP4, 2880, 2880});
    // The i-quants and 2-3 bit k-quants of DeepSeek-V3's and Kimi-K2's low-bit files (their experts: 7168x2048).
    for (GgmlType t : {GgmlType::IQ1_S, GgmlType::IQ2_XXS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                       GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K}) {
      shapes.push_back({t, 7168, 2048});
    }
    for (const Shape& sh : shapes) {
      for (int64_t n_tok : {1, 8, 64}) {
        const std::string name = "MUL_MAT " + std::string(strata::format::traits(sh.type).name) + " " +
                                 std::to_string(sh.n_in) + "x" + std::to_string(sh.n_out) + ", " +
                                 std::to_string(n_tok) + (n_tok == 1 ? " token" : " tokens");
        report(name, [&] { return bench_mul_mat(be, s, sh.type, sh.n_in, sh.n_out, n_tok); });
      }
    }
    // The vision encoder's products (Qwen3-VL's projector: F16 weights 1152 wide, a 4304-wide MLP) over 64 patches.
    for (const std::pair<int64_t, int64_t>& io : {std::pair<int64_t, int64_t>{1152, 3456}, {1152, 4304}, {4304, 1152}}) {
      const std::string name =
          "MUL_MAT f16 " + std::to_string(io.first) + "x" + std::to_string(io.second) + ", 64 tokens";
      report(name, [&] { return bench_mul_mat(be, s, GgmlType::F16, io.first, io.second, 64); });
    }
    // The pool as decode calls it: a few experts of one token, back to back or with the workers idle between; and
    // as a prompt does, 32 tokens an expert.
    struct PoolCase {
      uint32_t n_tok, n_exp, gap_us;
    };
    for (const PoolCase& c : {PoolCase{1, 8, 0}, PoolCase{4, 8, 0}, PoolCase{32, 8, 0}, PoolCase{1, 1, 0}, PoolCase{1, 2, 0},
                              PoolCase{1, 1, 1000}, PoolCase{1, 2, 1000}}) {
      const std::string name = "expert pool q4_K 2048x768, " + std::to_string(c.n_tok) +
                               (c.n_tok == 1 ? " token" : " tokens") + " x " + std::to_string(c.n_exp) +
                               (c.n_exp == 1 ? " expert" : " experts") +
                               (c.gap_us > 0 ? ", calls " + std::to_string(c.gap_us) + " us apart" : "");
      double call_us = 0.0;
      report(name, [&] { return bench_pool(be, s, GgmlType::Q4_K, 2048, 768, c.n_tok, c.n_exp, c.gap_us, &call_us); });
      if (call_us > 0) std::printf("| %s: best call, us | %.1f | |\n", name.c_str(), call_us);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
