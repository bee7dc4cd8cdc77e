// The ops a device program uses to hand work to its host and take the results back (plugin_api.h backend 1.3):
// COPY, SIGNAL and WAIT. Their descriptor checks, shared by the reference and every plugin; each returns why an
// op is not well formed, or nullopt. They read only descriptors, never `data`.
#pragma once

#include <optional>
#include <string>

#include "strata/plugin_api.h"

namespace strata::format {

// COPY: dst and src0 of one 4-byte type (F32 or I32) and shape [ne0, ne1], rows contiguous and nb[1] apart.
std::optional<std::string> check_copy(const strata_op& op);
// SIGNAL: dst an i32 [1] with data.
std::optional<std::string> check_signal(const strata_op& op);
// WAIT: src0 an i32 [1] with data; i[1] (the limit in ms for a backend that waits on the calling thread) >= 0.
std::optional<std::string> check_wait(const strata_op& op);

// WAIT's limit on a backend that waits on the calling thread, in milliseconds.
inline int wait_limit_ms(const strata_op& op) { return op.i[1] > 0 ? op.i[1] : 60000; }

}  // namespace strata::format
