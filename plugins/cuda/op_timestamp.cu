// TIMESTAMP: dst i64 [1] = the device's global timer (nanoseconds, one clock for every SM) when the op runs on the
// stream, i.e. after the ops before it. Stamps inside a captured graph are taken at each replay.
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

__global__ void stamp_kernel(unsigned long long* out) { *out = clock_ns(); }

}  // namespace

Check check_timestamp(const strata_op& op) {
  if (!format::is_type(op.dst, format::GgmlType::I64)) return std::string("TIMESTAMP dst must be i64");
  if (op.dst.data == nullptr) return std::string("TIMESTAMP dst has no data");
  return std::nullopt;
}

void run_timestamp(Context& ctx, const strata_op& op) {
  stamp_kernel<<<1, 1, 0, ctx.stream()>>>(static_cast<unsigned long long*>(op.dst.data));
  check_launch("TIMESTAMP");
}

}  // namespace strata::gpu
