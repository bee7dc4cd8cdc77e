// Several buffers of one op carved from one scratch slot: their offsets are taken first (each 16-byte aligned),
// then the slot is sized once for all of them.
#pragma once

#include <cstdint>

namespace strata::gpu {

struct ScratchCarve {
  uint64_t size = 0;
  // The offset of a buffer of `bytes`.
  uint64_t take(uint64_t bytes) {
    const uint64_t at = size;
    size = (size + bytes + 15) / 16 * 16;
    return at;
  }
};

}  // namespace strata::gpu
