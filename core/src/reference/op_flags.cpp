// COPY, SIGNAL and WAIT (plugin_api.h backend 1.3): how a device program hands work to its host and takes the
// results back. The reference's device is the calling thread, so WAIT waits there for another thread to set the
// flag, and gives up after its limit rather than hang.
#include <atomic>
#include <cstring>
#include <string>

#include "ops.hpp"
#include "strata/error.hpp"
#include "strata/format/flag_ops.hpp"

namespace strata::reference {
namespace {

void require_ok(const std::optional<std::string>& why) {
  if (why) throw Error(*why);
}

}  // namespace

void copy(const strata_op& op) {
  require_ok(format::check_copy(op));
  const strata_tensor &d = op.dst, &s = op.src[0];
  for (int64_t r = 0; r < s.ne[1]; ++r) {
    std::memcpy(static_cast<char*>(d.data) + static_cast<uint64_t>(r) * d.nb[1],
                static_cast<const char*>(s.data) + static_cast<uint64_t>(r) * s.nb[1], static_cast<size_t>(s.ne[0]) * 4);
  }
}

void signal(const strata_op& op) {
  require_ok(format::check_signal(op));
  if (int64_t* stamp = format::signal_stamp(op)) *stamp = format::host_clock_ns();
  std::atomic_ref<int32_t>(*static_cast<int32_t*>(op.dst.data)).store(op.i[0], std::memory_order_release);
}

void wait(const strata_op& op) {
  require_ok(format::check_wait(op));
  if (!format::wait_for_flag(static_cast<const int32_t*>(op.src[0].data), op.i[0], format::wait_limit_ms(op))) {
    throw Error("WAIT: the flag stayed below " + std::to_string(op.i[0]) + " for " +
                std::to_string(format::wait_limit_ms(op)) + " ms: whoever was to set it is gone");
  }
  if (int64_t* stamp = format::wait_stamp(op)) *stamp = format::host_clock_ns();
}

}  // namespace strata::reference
