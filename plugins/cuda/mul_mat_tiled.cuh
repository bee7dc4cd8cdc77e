// MUL_MAT for windows of more than eight tokens with quantized weights: the tiled product (tiled_product.cuh)
// decodes each weight span once per 32 tokens instead of once per 8. Same bits as the warp-per-row kernels.
#pragma once

#include "context.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

// Enqueues the op and returns true when it takes it (quantized weight with a tiled kernel, n_tok > 8); false
// leaves the op to run_mul_mat's own kernels. The op has passed check_mul_mat.
bool run_mul_mat_tiled(Context& ctx, const strata_op& op);

}  // namespace strata::gpu
