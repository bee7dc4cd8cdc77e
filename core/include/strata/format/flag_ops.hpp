// The ops a device program uses to hand work to its host and take the results back (plugin_api.h backend 1.3):
// COPY, SIGNAL and WAIT. Their descriptor checks, shared by the reference and every plugin; each returns why an
// op is not well formed, or nullopt. They read only descriptors, never `data`.
#pragma once

#include <cstdint>
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

// WAIT's limit on a backend that waits on the calling thread, in milliseconds (MOE_ROUTED's ready flag too).
inline int wait_limit_ms(const strata_op& op) { return op.i[1] > 0 ? op.i[1] : 60000; }

// MOE_ROUTED with i[0] = 1 (backend 1.3): src3's ready flag, the i32 right after its last column; NULL otherwise.
const int32_t* precomputed_ready(const strata_op& op);
// Why MOE_ROUTED's i[0] and i[1] are malformed (i[0] not 0 or 1, a flag without src3, a negative limit), or nullopt.
std::optional<std::string> check_precomputed_ready(const strata_op& op);
// Waits on the calling thread until *flag >= value (acquire); false when limit_ms passed first.
bool wait_for_flag(const int32_t* flag, int32_t value, int limit_ms);

}  // namespace strata::format
