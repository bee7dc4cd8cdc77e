// The reference backend: a plain scalar implementation of every op of plugin_api.h's strata_op_kind, on host
// memory, kept apart from the plugins. It defines what each op means (the comment at each op's implementation in
// core/src/reference/ is the definition); matrix products, SwiGLU and experts call the canonical functions
// (strata/format/canonical.hpp), so a plugin's results can be compared with it bit for bit. Single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/plugin_api.h"

namespace strata {

// Runs one op. Throws strata::Error naming the op and the tensor when kinds, types or shapes do not fit.
void run_reference(const strata_op& op);
// Runs ops in order.
void run_reference(const strata_op* ops, size_t n_ops);

// "MUL_MAT", "ROPE", ...; "unknown op" for a kind outside strata_op_kind.
const char* op_kind_name(uint32_t kind);

}  // namespace strata
