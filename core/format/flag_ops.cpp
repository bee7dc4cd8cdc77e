#include "strata/format/flag_ops.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include <time.h>

#include "strata/format/tensor_checks.hpp"

namespace strata::format {
namespace {

std::optional<std::string> check_flag(const strata_tensor& t, const char* op, const char* what) {
  if (!is_type(t, GgmlType::I32)) return std::string(op) + " " + what + " must be i32";
  if (t.data == nullptr) return std::string(op) + " " + what + " has no data";
  if (t.ne[0] != 1 || row_count(t) != 1) return std::string(op) + " " + what + " must be one value";
  if (reinterpret_cast<uintptr_t>(t.data) % 4 != 0) return std::string(op) + " " + what + " is not 4-byte aligned";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_copy(const strata_op& op) {
  const strata_tensor &d = op.dst, &s = op.src[0];
  if (!is_type(s, GgmlType::F32) && !is_type(s, GgmlType::I32)) {
    return "COPY copies f32 or i32 (4-byte elements), not " + type_name(s.type);
  }
  if (auto e = check_matrix(s, "COPY src0", static_cast<GgmlType>(s.type))) return e;
  if (auto e = check_matrix(d, "COPY dst", static_cast<GgmlType>(s.type))) return e;
  if (d.ne[0] != s.ne[0] || d.ne[1] != s.ne[1]) return std::string("COPY dst and src0 differ in shape");
  if (d.data == nullptr || s.data == nullptr) return std::string("COPY needs data in dst and src0");
  if ((reinterpret_cast<uintptr_t>(d.data) | reinterpret_cast<uintptr_t>(s.data) | d.nb[1] | s.nb[1]) % 4 != 0) {
    return std::string("COPY rows are not 4-byte aligned");
  }
  return std::nullopt;
}

std::optional<std::string> check_signal(const strata_op& op) {
  if (auto e = check_flag(op.dst, "SIGNAL", "dst")) return e;
  return check_flag_stamp(op);
}

std::optional<std::string> check_wait(const strata_op& op) {
  if (auto e = check_flag(op.src[0], "WAIT", "src0")) return e;
  if (op.i[1] < 0) return std::string("WAIT i[1] (the limit in ms) must not be negative");
  return check_flag_stamp(op);
}

std::optional<std::string> check_flag_stamp(const strata_op& op) {
  const strata_tensor& t = op.src[1];
  if (t.data == nullptr) return std::nullopt;
  const char* name = op.kind == STRATA_OP_SIGNAL ? "SIGNAL" : "WAIT";
  if (!is_type(t, GgmlType::I64)) return std::string(name) + " src1 (the stamp) must be i64";
  if (t.ne[0] != 1 || row_count(t) != 1) return std::string(name) + " src1 (the stamp) must be one value";
  if (reinterpret_cast<uintptr_t>(t.data) % 8 != 0) return std::string(name) + " src1 (the stamp) is not 8-byte aligned";
  return std::nullopt;
}

int64_t* signal_stamp(const strata_op& op) {
  return op.kind == STRATA_OP_SIGNAL ? static_cast<int64_t*>(op.src[1].data) : nullptr;
}

int64_t* wait_stamp(const strata_op& op) {
  return op.kind == STRATA_OP_WAIT ? static_cast<int64_t*>(op.src[1].data) : nullptr;
}

int64_t* ready_stamp(const strata_op& op) {
  const int32_t* ready = precomputed_ready(op);
  if (ready == nullptr || op.i[3] != 1) return nullptr;
  const auto at = (reinterpret_cast<uintptr_t>(ready + 1) + 7) & ~uintptr_t{7};
  return reinterpret_cast<int64_t*>(at);
}

int64_t host_clock_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const int32_t* precomputed_ready(const strata_op& op) {
  if (op.kind != STRATA_OP_MOE_ROUTED || op.i[0] != 1 || op.src[3].data == nullptr) return nullptr;
  const strata_tensor& pre = op.src[3];
  return reinterpret_cast<const int32_t*>(static_cast<const char*>(pre.data) + static_cast<uint64_t>(pre.ne[1]) * pre.nb[1]);
}

std::optional<std::string> check_precomputed_ready(const strata_op& op) {
  if (op.i[0] != 0 && op.i[0] != 1) return std::string("MOE_ROUTED i[0] (src3 has a ready flag) must be 0 or 1");
  if (op.i[0] == 1 && op.src[3].data == nullptr) return std::string("MOE_ROUTED i[0] = 1 (a ready flag) needs src3");
  if (op.i[0] == 1 && op.src[3].nb[1] % 4 != 0) return std::string("MOE_ROUTED src3's ready flag is not 4-byte aligned");
  if (op.i[1] < 0) return std::string("MOE_ROUTED i[1] (the ready flag's limit in ms) must not be negative");
  if (op.i[3] != 0 && op.i[3] != 1) return std::string("MOE_ROUTED i[3] (a stamp after the ready flag) must be 0 or 1");
  if (op.i[3] == 1 && op.i[0] != 1) return std::string("MOE_ROUTED i[3] = 1 (a stamp after the ready flag) needs i[0] = 1");
  return std::nullopt;
}

bool wait_for_flag(const int32_t* flag, int32_t value, int limit_ms) {
  std::atomic_ref<int32_t> word(*const_cast<int32_t*>(flag));  // read only
  const auto limit = std::chrono::steady_clock::now() + std::chrono::milliseconds(limit_ms);
  for (uint32_t spin = 0; word.load(std::memory_order_acquire) < value; ++spin) {
    if (spin < 1000) continue;  // a flag raised within microseconds is seen without a trip through the scheduler
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace strata::format
