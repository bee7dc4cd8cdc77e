// Where a MOE_ROUTED pair's weighted row is when its token's sum reads it: in the op's computed rows, or, for a
// pair whose expert entry has no gate matrix (computed elsewhere: plugin_api.h, src3), in src3's column t * k + j.
// The grouping kernels (op_moe_routed.cu, moe_tiled.cu) list each token's pairs with kPairElsewhere set on the
// second kind; the sum kernels read every row through pair_row so both kinds are added in the same order with the
// same operations.
#pragma once

#include <cstdint>

#include "gpu_runtime.cuh"

namespace strata::gpu {

// A token's list entry: the pair index p = t * k + j, with this bit set when its row comes from src3.
constexpr uint32_t kPairElsewhere = 1u << 31;

// Value d of the row of list entry `entry`: computed rows are `rows_stride` floats apart, src3's columns
// `pre_stride`. A pair computed elsewhere without src3 is the caller's error (plugin_api.h); it reads NaN, so the
// token's sum shows it instead of the device faulting on a NULL pointer.
__device__ inline float pair_row(uint32_t entry, int64_t d, const float* rows, int64_t rows_stride, const float* pre,
                                 int64_t pre_stride) {
  if ((entry & kPairElsewhere) == 0) return rows[static_cast<int64_t>(entry) * rows_stride + d];
  if (pre == nullptr) return __int_as_float(0x7fc00000);
  return pre[static_cast<int64_t>(entry & ~kPairElsewhere) * pre_stride + d];
}

}  // namespace strata::gpu
