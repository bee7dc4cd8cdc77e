// The list of fusions run_ops_at tries at each op, in order. Each is defined next to the kernels it launches; a
// fusion must give exactly the bytes of its ops run one by one (the op-parity suite checks the ops, and
// tests/gpu compares whole decode steps with the CPU).
#include "mul_mat_group.cuh"
#include "ops.hpp"

namespace strata::gpu {

const std::vector<FusionFn>& fusions() {
  static const std::vector<FusionFn> list = {
      fuse_mul_mat_group,
  };
  return list;
}

}  // namespace strata::gpu
