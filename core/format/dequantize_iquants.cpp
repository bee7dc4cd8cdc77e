// The i-quants. IQ2/IQ3/IQ1 pick 8 (or 4) magnitudes at a time from a fixed lattice (tables.hpp) and apply
// signs and a per-32 scale; IQ4_NL/IQ4_XS map 4-bit indices through a non-linear 16-entry table.
// Every value is formed as ggml forms it (scale product first, then grid value, then sign) so the rounding
// matches bit for bit.
#include <cstring>

#include "block_io.hpp"
#include "block_scales.hpp"
#include "dequantize_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::kernels {
namespace {

float sign_of(uint8_t signs, int j) { return (signs & kmask_iq2xs[j]) ? -1.0f : 1.0f; }

// Writes 8 values: db * grid magnitude * sign, with `signs` bit j flipping value j.
void emit8(float*& out, float db, uint64_t grid, uint8_t signs) {
  for (int j = 0; j < 8; ++j) out[j] = db * static_cast<float>(grid_byte(grid, j)) * sign_of(signs, j);
  out += 8;
}

}  // namespace

void dequantize_iq2_xxs(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq2_xxs>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // Per 32 values, 8 bytes: four grid indices, then 4x7 sign bits and a 4-bit scale in the top nibble.
      uint8_t idx[4];
      uint32_t meta;
      std::memcpy(idx, &b.qs[4 * ib], 4);
      std::memcpy(&meta, &b.qs[4 * ib + 2], 4);
      const float db = iq2_scale(d, static_cast<int>(meta >> 28));
      for (int l = 0; l < 4; ++l) emit8(out, db, iq2xxs_grid[idx[l]], ksigns_iq2xs[(meta >> (7 * l)) & 127]);
    }
  }
}

void dequantize_iq2_xs(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq2_xs>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float db[2] = {iq2_scale(d, b.scales[ib] & 0x0f), iq2_scale(d, b.scales[ib] >> 4)};
      for (int l = 0; l < 4; ++l) {
        const uint16_t q = b.qs[4 * ib + l];  // 9-bit grid index, 7-bit sign index
        emit8(out, db[l / 2], iq2xs_grid[q & 511], ksigns_iq2xs[q >> 9]);
      }
    }
  }
}

void dequantize_iq2_s(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq2_s>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    // qs holds 32 low index bytes, then 32 explicit sign bytes; qh adds two index bits per group of 8.
    const uint8_t* signs = b.qs + QK_K / 8;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const float db[2] = {iq2_scale(d, b.scales[ib] & 0x0f), iq2_scale(d, b.scales[ib] >> 4)};
      for (int l = 0; l < 4; ++l) {
        const int index = b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300);
        emit8(out, db[l / 2], iq2s_grid[index], signs[4 * ib + l]);
      }
    }
  }
}

void dequantize_iq3_xxs(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq3_xxs>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    // 64 grid index bytes, then per 32 values a u32 of 4x7 sign bits and a 4-bit scale in the top nibble.
    const uint8_t* scales_and_signs = b.qs + QK_K / 4;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      uint32_t meta;
      std::memcpy(&meta, scales_and_signs + 4 * ib, 4);
      const float db = d * (0.5f + static_cast<float>(meta >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = ksigns_iq2xs[(meta >> (7 * l)) & 127];
        const uint32_t g1 = iq3xxs_grid[b.qs[8 * ib + 2 * l]];
        const uint32_t g2 = iq3xxs_grid[b.qs[8 * ib + 2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          out[j] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs, j);
          out[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs, j + 4);
        }
        out += 8;
      }
    }
  }
}

void dequantize_iq3_s(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq3_s>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // One 4-bit scale per 32 values (two per byte), as d * (1 + 2s); qh[ib] adds the ninth index bit.
      const int s = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
      const float db = d * static_cast<float>(1 + 2 * s);
      const uint8_t* qs = b.qs + 8 * ib;
      const uint8_t* signs = b.signs + 4 * ib;
      for (int l = 0; l < 4; ++l) {
        const uint32_t g1 = iq3s_grid[qs[2 * l] | ((b.qh[ib] << (8 - 2 * l)) & 256)];
        const uint32_t g2 = iq3s_grid[qs[2 * l + 1] | ((b.qh[ib] << (7 - 2 * l)) & 256)];
        for (int j = 0; j < 4; ++j) {
          out[j] = db * static_cast<float>(grid_byte(g1, j)) * sign_of(signs[l], j);
          out[j + 4] = db * static_cast<float>(grid_byte(g2, j)) * sign_of(signs[l], j + 4);
        }
        out += 8;
      }
    }
  }
}

void dequantize_iq1_s(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq1_s>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // qh[ib]: 3 index bits per group of 8 (bits 0-11), a 3-bit scale (12-14), the delta's sign (15).
      const uint16_t qh = b.qh[ib];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -IQ1S_DELTA : IQ1S_DELTA;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = iq1s_grid[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) {
          const auto g = static_cast<int8_t>(grid_byte(grid, j));
          out[j] = dl * (static_cast<float>(g) + delta);
        }
        out += 8;
      }
    }
  }
}

void dequantize_iq1_m(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq1_m>(blocks, i);
    uint16_t sc[4];
    std::memcpy(sc, b.scales, sizeof sc);
    // The f16 super-block scale is spread over the top nibbles of the four scale words.
    const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                              (sc[3] & 0xf000));
    const float d = fp16_to_fp32(d_bits);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // Two 3-bit scales per 32 values (one per 16), four per scale word.
      const int shift = 6 * (ib % 2);
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> shift) & 7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1);
      const uint8_t* qs = b.qs + 4 * ib;
      const uint8_t* qh = b.qh + 2 * ib;
      // Each qh nibble: 3 high index bits, then the delta's sign (bit 3).
      const int index[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                            qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
      const float delta[4] = {(qh[0] & 0x08) ? -IQ1M_DELTA : IQ1M_DELTA, (qh[0] & 0x80) ? -IQ1M_DELTA : IQ1M_DELTA,
                              (qh[1] & 0x08) ? -IQ1M_DELTA : IQ1M_DELTA, (qh[1] & 0x80) ? -IQ1M_DELTA : IQ1M_DELTA};
      for (int l = 0; l < 4; ++l) {
        const float dl = l < 2 ? dl1 : dl2;
        const uint64_t grid = iq1s_grid[index[l]];
        for (int j = 0; j < 8; ++j) {
          const auto g = static_cast<int8_t>(grid_byte(grid, j));
          out[j] = dl * (static_cast<float>(g) + delta[l]);
        }
        out += 8;
      }
    }
  }
}

void dequantize_iq4_nl(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK4_NL) {
    const auto b = load_block<block_iq4_nl>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < QK4_NL / 2; ++j) {
      out[j] = d * static_cast<float>(kvalues_iq4nl[b.qs[j] & 0x0f]);
      out[j + QK4_NL / 2] = d * static_cast<float>(kvalues_iq4nl[b.qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_iq4_xs>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < QK_K / 32; ++ib, out += 32) {
      // 6-bit scale biased by 32: low nibble from scales_l, top two bits from scales_h.
      const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((b.scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = b.qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        out[j] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0x0f]);
        out[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace strata::format::kernels
