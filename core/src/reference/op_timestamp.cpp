// TIMESTAMP: dst i64 [1] = nanoseconds of the host's monotonic clock when the op runs (the reference's device is
// the host). Its value is a time, so the parity suite does not compare it; stamps only ever increase.
#include <time.h>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"

namespace strata::reference {

void timestamp(const strata_op& op) {
  require_type("TIMESTAMP", "dst", op.dst, GgmlType::I64);
  require_data("TIMESTAMP", "dst", op.dst);
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const int64_t ns = static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  *static_cast<int64_t*>(op.dst.data) = ns;
}

}  // namespace strata::reference
