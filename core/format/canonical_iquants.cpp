// The i-quants decomposed. c_k is the dequantizer's per-group scale `db` (dequantize_iquants.cpp) and g_i the
// signed grid value; IQ1_S/IQ1_M fold their +-1/8 delta into the integer: dl * (grid + delta) equals
// (dl * 0.125f) * (8 * grid +- 1), and dl * 0.125f is exact (dl is at least 2^-24, far from the subnormals).
#include <cstring>

#include "block_io.hpp"
#include "block_scales.hpp"
#include "canonical_kernels.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::kernels {
namespace {

// Grid byte `j` of an entry, negated when bit `sign_bit` of `signs` is set.
int signed_grid(uint64_t grid, int j, uint8_t signs, int sign_bit) {
  const int magnitude = grid_byte(grid, j);
  return (signs & kmask_iq2xs[sign_bit]) ? -magnitude : magnitude;
}

// Writes 8 signed grid values.
void put8(int32_t*& g, uint64_t grid, uint8_t signs) {
  for (int j = 0; j < 8; ++j) g[j] = signed_grid(grid, j, signs, j);
  g += 8;
}

// Writes 8 values from two 4-value grid entries with one sign byte.
void put4x2(int32_t*& g, uint32_t g1, uint32_t g2, uint8_t signs) {
  for (int j = 0; j < 4; ++j) {
    g[j] = signed_grid(g1, j, signs, j);
    g[j + 4] = signed_grid(g2, j, signs, j + 4);
  }
  g += 8;
}

// IQ1's 8 grid values with the delta folded in: 8 * grid + 1, or 8 * grid - 1 when the delta is negative.
void put8_iq1(int32_t*& g, uint64_t grid, bool negative_delta) {
  for (int j = 0; j < 8; ++j) g[j] = 8 * static_cast<int8_t>(grid_byte(grid, j)) + (negative_delta ? -1 : 1);
  g += 8;
}

}  // namespace

void decompose_iq2_xxs(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq2_xxs>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    uint8_t idx[4];
    uint32_t meta;
    std::memcpy(idx, &b.qs[4 * ib], 4);
    std::memcpy(&meta, &b.qs[4 * ib + 2], 4);
    out.c[ib] = iq2_scale(d, static_cast<int>(meta >> 28));
    out.b[ib] = 0.0f;
    for (int l = 0; l < 4; ++l) put8(g, iq2xxs_grid[idx[l]], ksigns_iq2xs[(meta >> (7 * l)) & 127]);
  }
}

void decompose_iq2_xs(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq2_xs>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    out.c[2 * ib] = iq2_scale(d, b.scales[ib] & 0x0f);
    out.c[2 * ib + 1] = iq2_scale(d, b.scales[ib] >> 4);
    out.b[2 * ib] = out.b[2 * ib + 1] = 0.0f;
    for (int l = 0; l < 4; ++l) {
      const uint16_t q = b.qs[4 * ib + l];
      put8(g, iq2xs_grid[q & 511], ksigns_iq2xs[q >> 9]);
    }
  }
}

void decompose_iq2_s(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq2_s>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  const uint8_t* signs = b.qs + QK_K / 8;
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    out.c[2 * ib] = iq2_scale(d, b.scales[ib] & 0x0f);
    out.c[2 * ib + 1] = iq2_scale(d, b.scales[ib] >> 4);
    out.b[2 * ib] = out.b[2 * ib + 1] = 0.0f;
    for (int l = 0; l < 4; ++l) {
      const int grid_index = b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300);
      put8(g, iq2s_grid[grid_index], signs[4 * ib + l]);
    }
  }
}

void decompose_iq3_xxs(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq3_xxs>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  const uint8_t* scales_and_signs = b.qs + QK_K / 4;
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    uint32_t meta;
    std::memcpy(&meta, scales_and_signs + 4 * ib, 4);
    out.c[ib] = d * (0.5f + static_cast<float>(meta >> 28)) * 0.5f;
    out.b[ib] = 0.0f;
    for (int l = 0; l < 4; ++l) {
      put4x2(g, iq3xxs_grid[b.qs[8 * ib + 2 * l]], iq3xxs_grid[b.qs[8 * ib + 2 * l + 1]],
             ksigns_iq2xs[(meta >> (7 * l)) & 127]);
    }
  }
}

void decompose_iq3_s(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq3_s>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const int s = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
    out.c[ib] = d * static_cast<float>(1 + 2 * s);
    out.b[ib] = 0.0f;
    const uint8_t* qs = b.qs + 8 * ib;
    for (int l = 0; l < 4; ++l) {
      const uint32_t g1 = iq3s_grid[qs[2 * l] | ((b.qh[ib] << (8 - 2 * l)) & 256)];
      const uint32_t g2 = iq3s_grid[qs[2 * l + 1] | ((b.qh[ib] << (7 - 2 * l)) & 256)];
      put4x2(g, g1, g2, b.signs[4 * ib + l]);
    }
  }
}

void decompose_iq1_s(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq1_s>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const uint16_t qh = b.qh[ib];
    const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    out.c[ib] = dl * 0.125f;
    out.b[ib] = 0.0f;
    const bool negative = (qh & 0x8000) != 0;
    for (int l = 0; l < 4; ++l) put8_iq1(g, iq1s_grid[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], negative);
  }
}

void decompose_iq1_m(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq1_m>(blocks, index);
  uint16_t sc[4];
  std::memcpy(sc, b.scales, sizeof sc);
  const auto d_bits =
      static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
  const float d = fp16_to_fp32(d_bits);
  int32_t* g = out.g;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const int shift = 6 * (ib % 2);
    const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> shift) & 7) + 1);
    const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1);
    out.c[2 * ib] = dl1 * 0.125f;
    out.c[2 * ib + 1] = dl2 * 0.125f;
    out.b[2 * ib] = out.b[2 * ib + 1] = 0.0f;
    const uint8_t* qs = b.qs + 4 * ib;
    const uint8_t* qh = b.qh + 2 * ib;
    const int grid_index[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                               qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
    const bool negative[4] = {(qh[0] & 0x08) != 0, (qh[0] & 0x80) != 0, (qh[1] & 0x08) != 0, (qh[1] & 0x80) != 0};
    for (int l = 0; l < 4; ++l) put8_iq1(g, iq1s_grid[grid_index[l]], negative[l]);
  }
}

void decompose_iq4_nl(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq4_nl>(blocks, index);
  out.c[0] = fp16_to_fp32(b.d);
  out.b[0] = 0.0f;
  for (int j = 0; j < QK4_NL / 2; ++j) {
    out.g[j] = kvalues_iq4nl[b.qs[j] & 0x0f];
    out.g[j + QK4_NL / 2] = kvalues_iq4nl[b.qs[j] >> 4];
  }
}

void decompose_iq4_xs(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_iq4_xs>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((b.scales_h >> (2 * ib)) & 3) << 4);
    out.c[ib] = d * static_cast<float>(ls - 32);
    out.b[ib] = 0.0f;
    const uint8_t* qs = b.qs + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      out.g[32 * ib + j] = kvalues_iq4nl[qs[j] & 0x0f];
      out.g[32 * ib + j + 16] = kvalues_iq4nl[qs[j] >> 4];
    }
  }
}

}  // namespace strata::format::kernels
