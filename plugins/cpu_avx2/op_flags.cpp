// COPY, SIGNAL and WAIT (plugin_api.h backend 1.3). This backend's device is the calling thread: WAIT waits there
// for another thread to set the flag, and fails with STRATA_ERR_UNAVAILABLE after its limit rather than hang.
#include <atomic>
#include <cstring>

#include "ops.hpp"
#include "strata/format/flag_ops.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

Check check_copy(const strata_op& op) { return format::check_copy(op); }
Check check_signal(const strata_op& op) { return format::check_signal(op); }
Check check_wait(const strata_op& op) { return format::check_wait(op); }

void run_copy(Context&, const strata_op& op) {
  for (int64_t r = 0; r < op.src[0].ne[1]; ++r) {
    std::memcpy(row_ptr(op.dst, r), row_ptr(op.src[0], r), static_cast<size_t>(op.src[0].ne[0]) * 4);
  }
}

void run_signal(Context&, const strata_op& op) {
  if (int64_t* stamp = format::signal_stamp(op)) *stamp = format::host_clock_ns();
  std::atomic_ref<int32_t>(*static_cast<int32_t*>(op.dst.data)).store(op.i[0], std::memory_order_release);
}

void run_wait(Context&, const strata_op& op) {
  if (!format::wait_for_flag(static_cast<const int32_t*>(op.src[0].data), op.i[0], format::wait_limit_ms(op))) {
    throw OpFailure(STRATA_ERR_UNAVAILABLE, "WAIT: the flag stayed below " + std::to_string(op.i[0]) + " for " +
                                                std::to_string(format::wait_limit_ms(op)) +
                                                " ms: whoever was to set it is gone");
  }
  if (int64_t* stamp = format::wait_stamp(op)) *stamp = format::host_clock_ns();
}

}  // namespace strata::cpu
