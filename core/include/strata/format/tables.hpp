// ggml's constant lookup tables for the IQ and FP4 formats. The values are generated at build time from
// core/format/data/grids/*.bin (checked against grids.tsv's sha256), never written by hand.
// Each uint64 (uint32) grid entry packs 8 (4) values: byte j, little-endian, is element j.
#pragma once

#include <cstdint>

namespace strata::format {

extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];
extern const uint64_t iq1s_grid[2048];   // bytes are int8 -1/0/+1 (the CPU packing, not ggml's GPU one)
extern const uint8_t ksigns_iq2xs[128];  // 7 sign bits -> 8 with even parity
extern const uint8_t kmask_iq2xs[8];     // 1 << j
extern const uint64_t ksigns64[128];     // ksigns_iq2xs expanded to one 0x00/0xff byte per sign
extern const int8_t kvalues_iq4nl[16];
extern const int8_t kvalues_mxfp4[16];   // E2M1 values doubled; decoders use half the block scale

// IQ1_S / IQ1_M add or subtract this shift to every grid value.
constexpr float IQ1S_DELTA = 0.125f;
constexpr float IQ1M_DELTA = 0.125f;

}  // namespace strata::format
