// TIMESTAMP: dst i64 [1] = the host's monotonic clock in nanoseconds when the op runs (this backend's device is the
// host, and ops run in order).
#include <time.h>

#include "ops.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

Check check_timestamp(const strata_op& op) {
  if (!is_type(op.dst, format::GgmlType::I64)) return std::string("TIMESTAMP dst must be i64");
  if (op.dst.data == nullptr) return std::string("TIMESTAMP dst has no data");
  return std::nullopt;
}

void run_timestamp(Context&, const strata_op& op) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *static_cast<int64_t*>(op.dst.data) = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace strata::cpu
