// The link probe: what the hybrid step's PCIe copies and its CPU pool can read, measured at start. link_share.hpp
// turns the measures into experts.pcie_frac's default ("from the link alone": the pool's kernels are not timed).
//
// The link: copies of `bytes` from page-locked anonymous host memory (the host expert arena's kind: disk-file
// mappings are not registered, see docs/ARCHITECTURE.md) into device memory on a stream of their own, timed on the
// host around the stream's event; the median of `reps` after a warm-up. A copy's fixed cost: `kSmallCopies` small
// copies enqueued back to back, their total over their count (what each extra expert's copy adds in a queue).
// Memory that cannot be page-locked is timed with pageable copies, and the measure says so (never an abort).
#pragma once

#include <cstdint>
#include <string>

#include "strata/device_memory.hpp"
#include "strata/device_queues.hpp"

namespace strata::experts {

struct LinkMeasure {
  double h2d_bytes_per_s = 0;   // large host-to-device copies
  double copy_overhead_s = 0;   // one small copy's share of a queue of them
  double batch_overhead_s = 0;  // the same, the queue enqueued as one batch (DeviceQueues::copy_batch_async)
  bool pinned = false;          // false: the host memory was pageable (why_not_pinned says why)
  std::string why_not_pinned;
  uint64_t bytes = 0;           // of each large copy
};

inline constexpr uint64_t kLinkProbeBytes = uint64_t{256} << 20;
inline constexpr int kSmallCopies = 64;
inline constexpr uint64_t kSmallCopyBytes = 4096;

// Throws strata::Error for bytes below kSmallCopyBytes or reps < 1, and when the device fails (the message names
// the call).
LinkMeasure probe_link(DeviceMemory& memory, DeviceQueues& queues, uint64_t bytes = kLinkProbeBytes, int reps = 4);

// The device memory's traffic rate (bytes/s, read and written counted): a device-to-device copy of `bytes`, the best
// of `reps` after a warm-up. The roofline's rate for weights read from VRAM.
double measure_device_copy(DeviceMemory& memory, DeviceQueues& queues, uint64_t bytes = uint64_t{1} << 30, int reps = 3);
// The host's read bandwidth (bytes/s): `threads` threads each summing their share of a `bytes` buffer (much larger
// than the caches), best of `reps`. Throws strata::Error for threads < 1, reps < 1 or bytes below 1 MiB.
double measure_host_read(unsigned threads, uint64_t bytes, int reps = 3);

// "pinned host-to-device 52.10 GB/s (256 MiB copies), 8.2 us a queued small copy"
std::string describe(const LinkMeasure& m);

}  // namespace strata::experts
