// cpu_avx2 as a plugin: its options (unknown keys and bad values rejected by name), its device, its expert pool
// (rows equal to the reference's, the done flag set), results independent of the number of workers and of
// timing, and an idle pool that sleeps instead of spinning.
#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "strata/backend.hpp"
#include "strata/error.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_weights.hpp"
#include "strata/op_tensor.hpp"
#include "strata/plugin_host.hpp"
#include "strata/reference_backend.hpp"

namespace strata {
namespace {

using format::GgmlType;

PluginRegistry& registry() {
  static PluginRegistry r([] {
    PluginSearchPath p;
    p.folders.push_back(STRATA_BUILD_PLUGIN_DIR);
    p.origins.push_back("build plugin folder");
    return p;
  }());
  return r;
}

std::string init_error(const std::vector<std::string>& options) {
  try {
    registry().instantiate("cpu_avx2", options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<float> normal(std::mt19937& rng, size_t n, float sigma) {
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

std::vector<unsigned char> quantized(GgmlType t, int64_t rows, int64_t n, std::mt19937& rng) {
  const uint64_t rb = format::row_bytes(t, static_cast<uint64_t>(n));
  std::vector<unsigned char> w(rb * static_cast<uint64_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> f = normal(rng, static_cast<size_t>(n), 0.05f);
    format::quantize_row(t, f.data(), w.data() + static_cast<uint64_t>(r) * rb, n);
  }
  return w;
}

// A window of 3 tokens over 4 Q4_K/Q6_K experts, one of them without tokens.
struct Window {
  int64_t n_embd = 512, n_ff = 256;
  std::vector<std::vector<unsigned char>> mats;
  std::vector<strata_expert_weights> weights;
  std::vector<uint32_t> ids{2, 3, 7, 9}, offsets{0, 2, 4, 4, 5}, index{0, 2, 1, 2, 0};
  std::vector<float> route{0.5f, 0.25f, 0.75f, 0.125f, 0.5f};
  std::vector<float> x;
  strata_moe_op op{};

  explicit Window(std::mt19937& rng) {
    for (size_t e = 0; e < ids.size(); ++e) {
      mats.push_back(quantized(GgmlType::Q4_K, n_ff, n_embd, rng));
      mats.push_back(quantized(GgmlType::Q4_K, n_ff, n_embd, rng));
      mats.push_back(quantized(GgmlType::Q6_K, n_embd, n_ff, rng));
    }
    for (size_t e = 0; e < ids.size(); ++e) {
      weights.push_back({mats[3 * e].data(), mats[3 * e + 1].data(), mats[3 * e + 2].data(),
                         static_cast<uint32_t>(GgmlType::Q4_K), static_cast<uint32_t>(GgmlType::Q4_K),
                         static_cast<uint32_t>(GgmlType::Q6_K), 0});
    }
    x = normal(rng, static_cast<size_t>(3 * n_embd), 1.0f);
    op.n_embd = static_cast<uint32_t>(n_embd);
    op.n_ff = static_cast<uint32_t>(n_ff);
    op.n_tok = 3;
    op.n_experts = static_cast<uint32_t>(ids.size());
    op.expert_ids = ids.data();
    op.weights = weights.data();
    op.token_offsets = offsets.data();
    op.token_index = index.data();
    op.route_weight = route.data();
    op.x = x.data();
  }
  size_t pairs() const { return index.size(); }
};

// The outputs of a MUL_MAT and a MOE op on one instance, for comparing instances.
std::vector<float> run_ops(const PluginInstance& inst, std::mt19937 rng) {
  const auto* be = inst.get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
  const int64_t n = 2048, rows = 400, n_tok = 3;
  const std::vector<unsigned char> w = quantized(GgmlType::Q4_K, rows, n, rng);
  const std::vector<float> x = normal(rng, static_cast<size_t>(n * n_tok), 1.0f);
  std::vector<float> out(static_cast<size_t>(rows * n_tok));
  Window win(rng);
  std::vector<float> sums(static_cast<size_t>(win.n_embd * 3)), rows_out(win.pairs() * static_cast<size_t>(win.n_embd));
  win.op.rows = rows_out.data();
  strata_op ops[2] = {};
  ops[0].struct_size = ops[1].struct_size = sizeof(strata_op);
  ops[0].kind = STRATA_OP_MUL_MAT;
  ops[0].src[0] = make_tensor(w.data(), GgmlType::Q4_K, {n, rows});
  ops[0].src[1] = tensor_f32(x.data(), {n, n_tok});
  ops[0].dst = tensor_f32(out.data(), {rows, n_tok});
  ops[1].kind = STRATA_OP_MOE;
  ops[1].dst = tensor_f32(sums.data(), {win.n_embd, 3});
  ops[1].extra = &win.op;
  throw_if_error(be->compute(inst.ctx(), 0, ops, 2), "cpu_avx2", "compute");
  out.insert(out.end(), sums.begin(), sums.end());
  out.insert(out.end(), rows_out.begin(), rows_out.end());
  return out;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// cpu_avx2 addresses host memory: no device memory and no streams, so the engine keeps host buffers.
TEST(CpuAvx2Plugin, HasNoDeviceMemoryOrQueues) {
  auto be = make_plugin_backend(registry().instantiate("cpu_avx2"));
  EXPECT_EQ(be->device_memory(), nullptr);
  EXPECT_EQ(be->device_queues(), nullptr);
}

TEST(CpuAvx2, DescribesItselfAndItsDevice) {
  const PluginCandidate* c = registry().find("cpu_avx2");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->verdict, PluginCandidate::Verdict::Usable) << c->reason;
  EXPECT_EQ(c->families, "backend,expert_pool");
  EXPECT_NE(c->reason.find("AVX2+FMA+F16C"), std::string::npos) << c->reason;
  auto inst = registry().instantiate("cpu_avx2", {"workers=2", "host_worker=true"});
  const auto devs = inst->devices();
  ASSERT_EQ(devs.size(), 1u);
  EXPECT_EQ(devs[0].kind, STRATA_DEVICE_CPU);
  EXPECT_EQ(devs[0].compute_units, 3u);  // two workers and the calling thread
  EXPECT_NE(devs[0].arch.find("x86-64-v"), std::string::npos) << devs[0].arch;
  EXPECT_GT(devs[0].memory_total, devs[0].memory_free / 2);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model;
  while (model.empty() && std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
  }
  if (!model.empty()) {
    EXPECT_EQ(devs[0].name, model);
  }
}

TEST(CpuAvx2, RejectsUnknownOptionsAndBadValuesByName) {
  EXPECT_NE(init_error({"wokers=3"}).find("unknown option 'wokers'"), std::string::npos) << init_error({"wokers=3"});
  EXPECT_NE(init_error({"workers=many"}).find("workers=many"), std::string::npos);
  EXPECT_NE(init_error({"force_avx2=perhaps"}).find("force_avx2=perhaps"), std::string::npos);
  EXPECT_NE(init_error({"workers=0", "host_worker=false"}).find("no thread"), std::string::npos);
  EXPECT_EQ(init_error({"workers=0", "host_worker=true", "force_avx2=1"}), "(no error)");
  EXPECT_NE(init_error({"spin_us=-5"}).find("spin_us=-5"), std::string::npos);
  EXPECT_NE(init_error({"spin_us=2000000"}).find("microseconds"), std::string::npos);
  EXPECT_EQ(init_error({"spin_us=0"}), "(no error)");
  EXPECT_EQ(init_error({"spin_us=2000"}), "(no error)");
  // runtime.canonical_double reaches every backend plugin; this one always computes the double path.
  EXPECT_EQ(init_error({"canonical_double=true"}), "(no error)");
  EXPECT_EQ(init_error({"canonical_double=false"}), "(no error)");
  EXPECT_NE(init_error({"canonical_double=maybe"}).find("canonical_double=maybe"), std::string::npos);
}

// workers=auto (the default): the physical cores less the calling thread less `reserve` (the cores the host keeps
// for its own threads); never below the calling thread alone.
TEST(CpuAvx2, AutoWorkersLeaveTheReserve) {
  const auto units = [](const std::vector<std::string>& options) {
    return registry().instantiate("cpu_avx2", options)->devices().at(0).compute_units;
  };
  const uint32_t all = units({});
  EXPECT_GE(all, 1u);
  EXPECT_EQ(units({"workers=auto"}), all);
  EXPECT_EQ(units({"workers=auto", "reserve=1"}), all > 1 ? all - 1 : 1u);
  EXPECT_EQ(units({"reserve=1024"}), 1u);  // the calling thread alone
  EXPECT_EQ(units({"reserve=1024", "host_worker=false"}), 1u);  // one worker: something must compute
  EXPECT_EQ(units({"workers=3", "reserve=2"}), 4u);  // a number given: the reserve does not apply
  EXPECT_NE(init_error({"reserve=some"}).find("reserve=some"), std::string::npos);
  EXPECT_NE(init_error({"workers=lots"}).find("auto"), std::string::npos) << init_error({"workers=lots"});
  EXPECT_NE(init_error({"pin=maybe"}).find("pin=maybe"), std::string::npos);
  EXPECT_EQ(init_error({"pin=true", "workers=2"}), "(no error)");
}

TEST(CpuAvx2, ExpertPoolWritesReferenceRowsAndSetsTheFlag) {
  auto inst = registry().instantiate("cpu_avx2");
  const auto* pool = inst->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->worker_count(inst->ctx()), inst->devices().at(0).compute_units);
  std::mt19937 rng(3);
  Window win(rng);
  std::vector<float> got(win.pairs() * static_cast<size_t>(win.n_embd), -1.0f), want(got.size());
  win.op.rows = got.data();
  volatile uint32_t flag = 0;
  throw_if_error(pool->compute(inst->ctx(), &win.op, &flag, 77), "cpu_avx2", "expert_pool.compute");
  EXPECT_EQ(flag, 77u);
  // The reference's MOE writes the same rows (and sums them, which the pool never does).
  win.op.rows = want.data();
  std::vector<float> sums(static_cast<size_t>(win.n_embd * 3));
  strata_op ref{};
  ref.struct_size = sizeof ref;
  ref.kind = STRATA_OP_MOE;
  ref.dst = tensor_f32(sums.data(), {win.n_embd, 3});
  ref.extra = &win.op;
  run_reference(ref);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);

  win.op.rows = nullptr;
  const auto [code, message] = take_status(pool->compute(inst->ctx(), &win.op, nullptr, 0));
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(message.find("rows"), std::string::npos) << message;
}

// The pool cuts each op into pieces that any participant may claim: the bytes are the one-thread run's for any
// number of workers, pinned or not, and run after run.
TEST(CpuAvx2, ResultsDoNotDependOnWorkersOrRuns) {
  const std::mt19937 rng(5);
  auto one = registry().instantiate("cpu_avx2", {"workers=0"});
  const std::vector<float> a = run_ops(*one, rng);
  for (const auto& options : std::vector<std::vector<std::string>>{{"workers=3", "host_worker=false"},
                                                                   {"workers=1"},
                                                                   {"workers=2", "pin=true"},
                                                                   {"workers=7"},
                                                                   {"workers=16", "spin_us=0"}}) {
    auto inst = registry().instantiate("cpu_avx2", options);
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<float> b = run_ops(*inst, rng);
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << options[0] << ", run " << rep;
    }
  }
}

// expert_pool 1.1's worker limit (POOL_HOLD): the next computations use that many parts (workers left out sleep),
// the rows keep their bytes, and 0 gives every worker back. The backend's ops run on the limit too, and still give
// the same bytes, alternating limits run after run (a worker left out of one run takes the next).
TEST(CpuAvx2, WorkerLimitKeepsTheBytes) {
  auto inst = registry().instantiate("cpu_avx2", {"workers=5"});
  const auto* pool = inst->get<strata_expert_pool_v1>(STRATA_EXPERT_POOL_FAMILY, STRATA_EXPERT_POOL_VERSION);
  ASSERT_NE(pool, nullptr);
  ASSERT_GE(pool->header.minor, 1u);
  ASSERT_NE(pool->set_worker_limit, nullptr);
  EXPECT_EQ(pool->worker_count(inst->ctx()), 6u);
  std::mt19937 rng(11);
  Window win(rng);
  const auto rows = [&] {
    std::vector<float> out(win.pairs() * static_cast<size_t>(win.n_embd), -1.0f);
    win.op.rows = out.data();
    throw_if_error(pool->compute(inst->ctx(), &win.op, nullptr, 0), "cpu_avx2", "expert_pool.compute");
    return out;
  };
  const std::vector<float> all = rows();
  const std::mt19937 ops_rng(5);
  const std::vector<float> ops_all = run_ops(*inst, ops_rng);
  for (uint32_t n : {1u, 2u, 6u, 3u, 99u, 1u}) {
    throw_if_error(pool->set_worker_limit(inst->ctx(), n), "cpu_avx2", "set_worker_limit");
    EXPECT_EQ(pool->worker_count(inst->ctx()), std::min(n, 6u));
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<float> got = rows();
      EXPECT_EQ(std::memcmp(got.data(), all.data(), all.size() * sizeof(float)), 0) << "limit " << n;
    }
    const std::vector<float> ops = run_ops(*inst, ops_rng);
    EXPECT_EQ(std::memcmp(ops.data(), ops_all.data(), ops_all.size() * sizeof(float)), 0) << "limit " << n;
  }
  throw_if_error(pool->set_worker_limit(inst->ctx(), 0), "cpu_avx2", "set_worker_limit");
  EXPECT_EQ(pool->worker_count(inst->ctx()), 6u);
}

// MXFP4's E8M0 scales at their edges (0 and 1 give subnormal scales) in whole groups of eight blocks and in a row's
// partial last group, on both ISA paths: the AVX-512 one picks a whole group's scales (two rows at once) out of
// vector loads and a partial group's byte by byte. Both give the reference backend's bytes.
TEST(CpuAvx2, Mxfp4ScaleEdgesMatchTheReference) {
  const int64_t n = 2880, rows = 5, n_tok = 2;  // 90 blocks a row: 11 whole groups and one of 2; two row pairs and one row
  std::mt19937 rng(29);
  const uint64_t rb = format::row_bytes(GgmlType::MXFP4, static_cast<uint64_t>(n));
  std::vector<unsigned char> w(rb * static_cast<uint64_t>(rows));
  for (auto& c : w) c = static_cast<unsigned char>(rng());
  const unsigned char edges[] = {0, 1, 2, 3, 64, 126, 127, 128, 129, 160};  // 160: sums stay finite
  for (size_t b = 0; b < w.size() / 17; ++b) w[17 * b] = edges[rng() % std::size(edges)];
  const std::vector<float> x = normal(rng, static_cast<size_t>(n * n_tok), 1.0f);
  const auto mul_mat = [&](float* out) {
    strata_op op{};
    op.struct_size = sizeof op;
    op.kind = STRATA_OP_MUL_MAT;
    op.src[0] = make_tensor(w.data(), GgmlType::MXFP4, {n, rows});
    op.src[1] = tensor_f32(x.data(), {n, n_tok});
    op.dst = tensor_f32(out, {rows, n_tok});
    return op;
  };
  std::vector<float> want(static_cast<size_t>(rows * n_tok));
  run_reference(mul_mat(want.data()));
  for (const auto& options : std::vector<std::vector<std::string>>{{"workers=1"}, {"workers=1", "force_avx2=true"}}) {
    auto inst = registry().instantiate("cpu_avx2", options);
    const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
    std::vector<float> got(want.size(), -1.0f);
    const strata_op op = mul_mat(got.data());
    throw_if_error(be->compute(inst->ctx(), 0, &op, 1), "cpu_avx2", "compute");
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << options.back();
  }
}

TEST(CpuAvx2, RefusesWhatItCannotRun) {
  auto inst = registry().instantiate("cpu_avx2", {"workers=1"});
  const auto* be = inst->get<strata_backend_v1>(STRATA_BACKEND_FAMILY, STRATA_BACKEND_VERSION);
  std::vector<float> x(64 * 2), out(4 * 2);
  std::vector<unsigned char> w(format::row_bytes(GgmlType::Q8_0, 64) * 4);
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = STRATA_OP_MUL_MAT;
  op.src[0] = make_tensor(w.data(), GgmlType::Q8_0, {64, 4});
  op.src[1] = tensor_f32(x.data(), {64, 2});
  op.dst = tensor_f32(out.data(), {4, 2});
  EXPECT_EQ(be->supports_op(inst->ctx(), 0, &op), 1u);
  op.dst = tensor_f32(out.data(), {4, 1});  // wrong shape
  EXPECT_EQ(be->supports_op(inst->ctx(), 0, &op), 0u);
  const auto [code, message] = take_status(be->compute(inst->ctx(), 0, &op, 1));
  EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(message.find("dst"), std::string::npos) << message;
  op.kind = 999;
  EXPECT_EQ(be->supports_op(inst->ctx(), 0, &op), 0u);
  EXPECT_EQ(be->supports_op(inst->ctx(), 1, &op), 0u);
}

TEST(CpuAvx2, IdlePoolSleeps) {
  auto inst = registry().instantiate("cpu_avx2", {"workers=3"});
  std::mt19937 rng(9);
  run_ops(*inst, rng);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin before sleeping
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Three spinning workers would burn about 0.9 s of CPU here.
  EXPECT_LT(process_cpu_seconds() - before, 0.05);
}

}  // namespace
}  // namespace strata
