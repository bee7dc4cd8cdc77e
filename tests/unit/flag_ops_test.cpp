// WAIT and SIGNAL (plugin_api.h backend 1.3) on every backend under test, whose device is the calling thread: WAIT
// returns once another thread raised the flag, and what that thread wrote before it is then seen; a flag already
// raised lets it pass; a flag nobody raises fails after the op's limit, naming the op, instead of hanging; SIGNAL
// before WAIT in one list passes in program order; malformed flags are refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine_backends.hpp"
#include "strata/error.hpp"
#include "strata/format/flag_ops.hpp"
#include "strata/format/types.hpp"
#include "strata/op_tensor.hpp"

namespace {

strata_op flag_op(uint32_t kind, int32_t* flag, int32_t value, int32_t limit_ms = 0) {
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = kind;
  if (kind == STRATA_OP_WAIT) {
    op.src[0] = strata::tensor_i32(flag, {1});
  } else {
    op.dst = strata::tensor_i32(flag, {1});
  }
  op.i[0] = value;
  op.i[1] = limit_ms;
  return op;
}

class FlagOps : public ::testing::TestWithParam<std::string> {};

TEST_P(FlagOps, WaitReturnsOnceAnotherThreadRaisesTheFlag) {
  auto backend = strata::test::open_backend(GetParam());
  alignas(4) int32_t flag = 0;
  int32_t payload = 0;  // written before the flag, read after the wait
  int32_t seen = -1;
  strata_op wait = flag_op(STRATA_OP_WAIT, &flag, 2);
  ASSERT_TRUE(backend->supports(wait));
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    payload = 42;
    std::atomic_ref<int32_t>(flag).store(1, std::memory_order_release);  // below the value: not yet
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic_ref<int32_t>(flag).store(2, std::memory_order_release);
  });
  const auto t0 = std::chrono::steady_clock::now();
  backend->compute(std::span<const strata_op>(&wait, 1));
  seen = payload;
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  raiser.join();
  EXPECT_EQ(seen, 42);
  EXPECT_GE(waited, 0.045) << "WAIT returned before the flag reached its value";
}

TEST_P(FlagOps, RaisedFlagPassesAndSignalThenWaitRunInOrder) {
  auto backend = strata::test::open_backend(GetParam());
  alignas(4) int32_t flag = 0;
  const strata_op ops[2] = {flag_op(STRATA_OP_SIGNAL, &flag, 5), flag_op(STRATA_OP_WAIT, &flag, 5, 1000)};
  backend->compute(ops);
  EXPECT_EQ(flag, 5);
  backend->compute(std::span<const strata_op>(&ops[1], 1));  // already raised: passes at once
}

TEST_P(FlagOps, FlagNobodyRaisesFailsAfterTheLimit) {
  auto backend = strata::test::open_backend(GetParam());
  alignas(4) int32_t flag = 0;
  const strata_op wait = flag_op(STRATA_OP_WAIT, &flag, 1, 50);
  try {
    backend->compute(std::span<const strata_op>(&wait, 1));
    ADD_FAILURE() << "a WAIT on a flag nobody raises returned";
  } catch (const strata::Error& e) {
    EXPECT_NE(std::string(e.what()).find("WAIT"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gone"), std::string::npos) << e.what();
  }
}

TEST_P(FlagOps, MalformedFlagsAreRefused) {
  auto backend = strata::test::open_backend(GetParam());
  float f = 0;
  alignas(4) int32_t two[2] = {0, 0};
  strata_op bad[3] = {flag_op(STRATA_OP_WAIT, two, 1), flag_op(STRATA_OP_SIGNAL, two, 1),
                      flag_op(STRATA_OP_WAIT, two, 1, -1)};
  bad[0].src[0] = strata::tensor_f32(&f, {1});    // not i32
  bad[1].dst = strata::tensor_i32(two, {2});      // not one value
  for (const strata_op& op : bad) {
    if (GetParam() != "reference") {  // the reference runs every kind
      EXPECT_FALSE(backend->supports(op));
    }
    EXPECT_THROW(backend->compute(std::span<const strata_op>(&op, 1)), strata::Error);
  }
}

// Backend 1.5 stamps: SIGNAL's and WAIT's src1 get the clock as they pass, in program order and after the flag was
// raised; a stamp that is not one aligned i64 is refused.
TEST_P(FlagOps, SignalAndWaitStampTheClockAsTheyPass) {
  auto backend = strata::test::open_backend(GetParam());
  alignas(4) int32_t flag = 0;
  alignas(8) int64_t stamps[2] = {0, 0};
  strata_op ops[2] = {flag_op(STRATA_OP_SIGNAL, &flag, 1), flag_op(STRATA_OP_WAIT, &flag, 1, 1000)};
  ops[0].src[1] = strata::make_tensor(&stamps[0], strata::format::GgmlType::I64, {1});
  ops[1].src[1] = strata::make_tensor(&stamps[1], strata::format::GgmlType::I64, {1});
  if (GetParam() != "reference") {
    ASSERT_TRUE(backend->supports(ops[0]));
    ASSERT_TRUE(backend->supports(ops[1]));
  }
  const int64_t before = strata::format::host_clock_ns();
  backend->compute(ops);
  const int64_t after = strata::format::host_clock_ns();
  EXPECT_GE(stamps[0], before);
  EXPECT_GE(stamps[1], stamps[0]);
  EXPECT_LE(stamps[1], after);

  strata_op bad = ops[0];
  alignas(4) int32_t narrow = 0;
  bad.src[1] = strata::tensor_i32(&narrow, {1});  // not i64
  if (GetParam() != "reference") {
    EXPECT_FALSE(backend->supports(bad));
  }
  EXPECT_THROW(backend->compute(std::span<const strata_op>(&bad, 1)), strata::Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, FlagOps, ::testing::ValuesIn(strata::test::backends_under_test()),
                         [](const auto& p) { return p.param; });

// MOE_ROUTED with a ready flag on src3 (i[0] = 1): the op starts before the rows exist, another thread writes them
// and raises the flag (the i32 after src3's last column); the sum is over the rows written then, in ascending
// expert id ((1e8 + -1e8) + 1 = 1 shows the order). A flag nobody raises fails after i[1] ms.
TEST_P(FlagOps, MoeRoutedReadsPrecomputedRowsAfterTheirFlag) {
  auto backend = strata::test::open_backend(GetParam());
  const int64_t n = 32, k = 3;
  const auto q8 = static_cast<uint32_t>(strata::format::GgmlType::Q8_0);
  std::vector<strata_expert_weights> entries(4);
  for (strata_expert_weights& w : entries) w.gate_type = w.up_type = w.down_type = q8;  // all precomputed (NULL gate)
  const strata_expert_table table{static_cast<uint32_t>(n), static_cast<uint32_t>(n), 4, q8, q8, q8, entries.data(), nullptr};
  std::vector<float> x(n, 0.5f);
  const std::vector<int32_t> ids = {3, 0, 2};
  const std::vector<float> weights = {0.5f, 0.25f, 0.125f};
  std::vector<float> pre(n * k + 4, 0.0f);  // the columns, the flag, then room for the stamp (i[3] = 1)
  auto* flag = reinterpret_cast<int32_t*>(pre.data() + n * k);
  std::vector<float> dst(n, -7.0f);
  strata_op op{};
  op.struct_size = sizeof op;
  op.kind = STRATA_OP_MOE_ROUTED;
  op.src[0] = strata::tensor_f32(x.data(), {n, 1});
  op.src[1] = strata::tensor_i32(ids.data(), {k, 1});
  op.src[2] = strata::tensor_f32(weights.data(), {k, 1});
  op.src[3] = strata::tensor_f32(pre.data(), {n, k});
  op.dst = strata::tensor_f32(dst.data(), {n, 1});
  op.extra = &table;
  op.i[0] = 1;
  op.i[3] = 1;  // 1.5: stamp the clock after the flag as the op starts waiting on it
  if (GetParam() != "reference") {
    ASSERT_TRUE(backend->supports(op));
  }
  int64_t raised_at = 0;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (int64_t d = 0; d < n; ++d) {
      pre[d] = 1.0f;           // j = 0 (expert 3), added last
      pre[n + d] = 1e8f;       // j = 1 (expert 0), first
      pre[2 * n + d] = -1e8f;  // j = 2 (expert 2), second
    }
    raised_at = strata::format::host_clock_ns();
    std::atomic_ref<int32_t>(*flag).store(1, std::memory_order_release);
  });
  const int64_t started = strata::format::host_clock_ns();
  backend->compute(std::span<const strata_op>(&op, 1));
  writer.join();
  for (int64_t d = 0; d < n; ++d) EXPECT_EQ(dst[d], 1.0f) << d;
  const int64_t* stamp = strata::format::ready_stamp(op);
  ASSERT_NE(stamp, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stamp) % 8, 0u);
  EXPECT_GE(*stamp, started);
  EXPECT_LT(*stamp, raised_at) << "the stamp is taken as the wait starts, before the rows came";

  std::atomic_ref<int32_t>(*flag).store(0);
  op.i[1] = 50;
  EXPECT_THROW(backend->compute(std::span<const strata_op>(&op, 1)), strata::Error);
  op.i[0] = 2;  // not a mode
  EXPECT_THROW(backend->compute(std::span<const strata_op>(&op, 1)), strata::Error);
  op.i[0] = 0;  // a stamp needs the flag
  EXPECT_THROW(backend->compute(std::span<const strata_op>(&op, 1)), strata::Error);
}

}  // namespace
