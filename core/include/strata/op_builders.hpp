// The ops the host's graphs (the model's blocks, the vision encoder, the hybrid program) build most, each filled in
// one place: the operands in plugin_api.h's slots and the parameters in theirs. Every tensor is already described
// (op_tensor.hpp); these only set fields.
#pragma once

#include "strata/plugin_api.h"

namespace strata::ops {

// dst = w x (w's rows are the outputs).
strata_op mul_mat(const strata_tensor& w, const strata_tensor& x, const strata_tensor& dst);
// dst = a + b (b broadcast when it is one row); dst may be a.
strata_op add(const strata_tensor& a, const strata_tensor& b, const strata_tensor& dst);
// dst = rms_norm(x) [* w] with eps; w absent when it has no data.
strata_op rms_norm(const strata_tensor& x, const strata_tensor& w, float eps, const strata_tensor& dst);
// dst = layer_norm(x) [* w] [+ b] with eps.
strata_op layer_norm(const strata_tensor& x, const strata_tensor& w, const strata_tensor& b, float eps,
                     const strata_tensor& dst);
// dst = gelu(x), tanh form (table false) or ggml's f16 table (true); dst may be x.
strata_op gelu(const strata_tensor& x, bool table, const strata_tensor& dst);
// dst = src, element for element.
strata_op copy(const strata_tensor& src, const strata_tensor& dst);

}  // namespace strata::ops
