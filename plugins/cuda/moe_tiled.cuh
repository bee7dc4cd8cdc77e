// MOE_ROUTED for windows whose experts get many pairs each (prefill): the (token, k) pairs grouped by expert on
// the device, then per expert tiles of up to kTileCols pairs through the tiled product (tiled_product.cuh) for
// gate, up and down. Same bits as expert_pairs.cuh's pipeline: section 3 per pair, each token's weighted rows
// summed in ascending expert id.
#pragma once

#include "context.hpp"
#include "strata/plugin_api.h"

namespace strata::gpu {

// Enqueues the op and returns true when it takes it (quantized gate, up and down with tiled kernels, more than
// eight tokens, enough pairs per expert); false leaves it to run_moe_routed. The op has passed check_moe_routed.
bool run_moe_routed_tiled(Context& ctx, const strata_op& op);

}  // namespace strata::gpu
