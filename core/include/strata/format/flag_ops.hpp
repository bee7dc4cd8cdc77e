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
// Why MOE_ROUTED's i[0], i[1] and i[3] are malformed (i[0] not 0 or 1, a flag without src3, a negative limit, a stamp
// without a flag), or nullopt.
std::optional<std::string> check_precomputed_ready(const strata_op& op);
// Backend 1.5 stamps: the device's clock (ns, TIMESTAMP's clock) written by a flag op as it passes, so a host can
// see when a device program's hand-offs happened without a launch of their own. Each returns where the op writes
// its stamp, or NULL for an op without one:
//  - SIGNAL: src1, an i64 [1]: as the flag is raised;
//  - WAIT: src1, an i64 [1]: as the wait ends;
//  - MOE_ROUTED with i[0] = 1 and i[3] = 1: the i64 at the first 8-byte boundary after src3's ready flag: as the
//    sums start waiting on that flag (the device's own experts are done).
int64_t* signal_stamp(const strata_op& op);
int64_t* wait_stamp(const strata_op& op);
int64_t* ready_stamp(const strata_op& op);
// Why src1 of SIGNAL or WAIT is not a stamp (not i64 [1], unaligned), or nullopt (also when there is none).
std::optional<std::string> check_flag_stamp(const strata_op& op);
// The host's clock that CPU backends stamp with (CLOCK_MONOTONIC, ns), as TIMESTAMP on a CPU backend.
int64_t host_clock_ns();

// Waits on the calling thread until *flag >= value (acquire); false when limit_ms passed first.
bool wait_for_flag(const int32_t* flag, int32_t value, int limit_ms);

}  // namespace strata::format
