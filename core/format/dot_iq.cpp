// Dot products of the IQ (lattice and non-linear) formats with Q8_K activations, in the order of ggml's
// ggml_vec_dot_iq*_q8_K_generic: exact integer sums per 32 values, scaled by the odd integer sub-block scales
// into one integer per super-block (IQ4_XS: one float update per 32 values), then the float steps.
#include "dot_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::detail {
namespace {

// Byte j of a packed grid entry (little-endian): the magnitude of element j.
int grid_byte(uint64_t entry, int j) { return static_cast<int>((entry >> (8 * j)) & 0xFF); }

// sum_j q8[j] * grid[j] * (bit j of `signs` ? -1 : 1) over the 8 elements of one grid entry.
int signed_grid8(uint64_t entry, uint8_t signs, const int8_t* q8) {
  int sum = 0;
  for (int j = 0; j < 8; ++j) sum += grid_byte(entry, j) * q8[j] * (signs & kmask_iq2xs[j] ? -1 : 1);
  return sum;
}

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One group of 32 in IQ3_XXS / IQ3_S: four pairs of 4-value grid entries g1 (values 8l..8l+3) and g2
// (8l+4..8l+7) with the 8 sign bits signs[l].
template <typename Entry>
int signed_grid4_pairs(Entry entry, const uint8_t* signs, const int8_t* q8) {
  int sum = 0;
  for (int l = 0; l < 4; ++l) {
    const uint32_t g1 = entry(2 * l);
    const uint32_t g2 = entry(2 * l + 1);
    for (int j = 0; j < 4; ++j) {
      sum += grid_byte(g1, j) * q8[8 * l + j] * (signs[l] & kmask_iq2xs[j] ? -1 : 1);
      sum += grid_byte(g2, j) * q8[8 * l + j + 4] * (signs[l] & kmask_iq2xs[j + 4] ? -1 : 1);
    }
  }
  return sum;
}

// The lattice formats' super-block loop (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): block_sum(x, y) is a super-block's
// integer sum, scaled by its odd sub-block scales; sum += (d * y.d) * that, in block order; times `scale` at the end
// (ggml's 1/8 or 1/4; IQ3_S has none: 1, which changes no bit).
template <class Block, class BlockSum>
float lattice_dot(const unsigned char* w, const unsigned char* a, int64_t nb, float scale, BlockSum&& block_sum) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<Block>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    const float d = fp16_to_fp32(x.d) * y.d;
    sum += d * static_cast<float>(block_sum(x, y));
  }
  return scale * sum;
}

}  // namespace

float dot_iq2_xxs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  return lattice_dot<block_iq2_xxs>(w, a, nb, 0.125f, [](const block_iq2_xxs& x, const block_q8_K& y) {
    // Per 32 values, 8 bytes: four grid indices, then a u32 with four 7-bit sign codes and a 4-bit scale on top.
    const auto* bytes = reinterpret_cast<const uint8_t*>(x.qs);
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* group = bytes + 8 * ib;
      const uint32_t signs_scale = load_u32(group + 4);
      int sumi = 0;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = ksigns_iq2xs[(signs_scale >> (7 * l)) & 127];
        sumi += signed_grid8(iq2xxs_grid[group[l]], signs, y.qs + 32 * ib + 8 * l);
      }
      bsum += sumi * static_cast<int>(2 * (signs_scale >> 28) + 1);
    }
    return bsum;
  });
}

float dot_iq2_xs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  return lattice_dot<block_iq2_xs>(w, a, nb, 0.125f, [](const block_iq2_xs& x, const block_q8_K& y) {
    // Each u16: a 9-bit grid index and a 7-bit sign code; scales: one nibble per 16 values.
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      for (int half = 0; half < 2; ++half) {
        int sumi = 0;
        for (int l = 2 * half; l < 2 * half + 2; ++l) {
          const uint16_t code = x.qs[4 * ib + l];
          sumi += signed_grid8(iq2xs_grid[code & 511], ksigns_iq2xs[code >> 9], y.qs + 32 * ib + 8 * l);
        }
        bsum += sumi * (2 * ((x.scales[ib] >> (4 * half)) & 0xF) + 1);
      }
    }
    return bsum;
  });
}

float dot_iq2_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  return lattice_dot<block_iq2_s>(w, a, nb, 0.125f, [](const block_iq2_s& x, const block_q8_K& y) {
    // qs[0..31]: low 8 bits of the 10-bit grid indices; qs[32..63]: explicit sign bytes; qh: the index's top
    // two bits, 2 per entry.
    const uint8_t* signs = x.qs + QK_K / 8;
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      int sumi[2] = {0, 0};
      for (int l = 0; l < 4; ++l) {
        const int index = x.qs[4 * ib + l] | ((x.qh[ib] << (8 - 2 * l)) & 0x300);
        sumi[l / 2] += signed_grid8(iq2s_grid[index], signs[4 * ib + l], y.qs + 32 * ib + 8 * l);
      }
      const int ls1 = 1 + 2 * (x.scales[ib] & 0xF);
      const int ls2 = 1 + 2 * (x.scales[ib] >> 4);
      bsum += ls1 * sumi[0] + ls2 * sumi[1];
    }
    return bsum;
  });
}

float dot_iq3_xxs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  return lattice_dot<block_iq3_xxs>(w, a, nb, 0.25f, [](const block_iq3_xxs& x, const block_q8_K& y) {
    // qs[0..63]: 8-bit grid indices; qs[64..95]: per 32 values a u32 of four 7-bit sign codes and a 4-bit scale.
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint32_t signs_scale = load_u32(x.qs + QK_K / 4 + 4 * ib);
      uint8_t signs[4];
      for (int l = 0; l < 4; ++l) signs[l] = ksigns_iq2xs[(signs_scale >> (7 * l)) & 127];
      const uint8_t* q3 = x.qs + 8 * ib;
      const int sumi = signed_grid4_pairs([&](int k) { return iq3xxs_grid[q3[k]]; }, signs, y.qs + 32 * ib);
      bsum += sumi * static_cast<int>(2 * (signs_scale >> 28) + 1);
    }
    return bsum;
  });
}

float dot_iq3_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  return lattice_dot<block_iq3_s>(w, a, nb, 1.0f, [](const block_iq3_s& x, const block_q8_K& y) {
    // 9-bit grid indices: low 8 bits in qs, the ninth bit of entry k of group ib is bit k of qh[ib].
    int bsum = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const uint8_t* qs = x.qs + 8 * ib;
      const int qh = x.qh[ib];
      const int sumi = signed_grid4_pairs([&](int k) { return iq3s_grid[qs[k] | ((qh << (8 - k)) & 256)]; },
                                          x.signs + 4 * ib, y.qs + 32 * ib);
      bsum += sumi * (2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1);
    }
    return bsum;
  });
}

float dot_iq1_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_iq1_s>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // qh[ib]: bits 0-11 the top 3 bits of the four 11-bit grid indices, 12-14 the scale, 15 the delta's sign.
    int sumi = 0;
    int sumi_delta = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int qh = x.qh[ib];
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const int delta = qh & 0x8000 ? -1 : 1;
      int lsum = 0;
      for (int l = 0; l < 4; ++l) {
        const uint64_t entry = iq1s_grid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) lsum += y.qs[32 * ib + 8 * l + j] * static_cast<int8_t>(grid_byte(entry, j));
      }
      sumi += ls * lsum;
      sumi_delta += ls * delta * (y.bsums[2 * ib] + y.bsums[2 * ib + 1]);
    }
    sum += fp16_to_fp32(x.d) * y.d * (static_cast<float>(sumi) + IQ1S_DELTA * static_cast<float>(sumi_delta));
  }
  return sum;
}

float dot_iq1_m_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_iq1_m>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // scales as four u16: 3-bit sub-block scales in bits 0-11, the f16 super-block scale in the top nibbles.
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = load_u16(x.scales + 2 * k);
    const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                              (sc[3] & 0xF000));
    int sumi = 0;
    int sumi_delta = 0;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // Per 8 values l: qh[2ib + l/2] holds index bits 8-10 in its low (l even) or high (l odd) nibble, and the
      // delta's sign in that nibble's bit 3.
      const uint8_t* qh = x.qh + 2 * ib;
      int grid_sum[2] = {0, 0};
      int delta_sum[2] = {0, 0};
      for (int l = 0; l < 4; ++l) {
        const uint64_t entry = iq1s_grid[x.qs[4 * ib + l] | ((qh[l / 2] << (8 - 4 * (l % 2))) & 0x700)];
        const int delta = qh[l / 2] & (0x08 << (4 * (l % 2))) ? -1 : 1;
        int lsum_grid = 0;
        int lsum_q8 = 0;
        for (int j = 0; j < 8; ++j) {
          const int q8 = y.qs[32 * ib + 8 * l + j];
          lsum_grid += q8 * static_cast<int8_t>(grid_byte(entry, j));
          lsum_q8 += q8;
        }
        grid_sum[l / 2] += lsum_grid;
        delta_sum[l / 2] += lsum_q8 * delta;
      }
      const int ls1 = 2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1;
      const int ls2 = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1;
      sumi += grid_sum[0] * ls1 + grid_sum[1] * ls2;
      sumi_delta += delta_sum[0] * ls1 + delta_sum[1] * ls2;
    }
    sum += fp16_to_fp32(d_bits) * y.d * (static_cast<float>(sumi) + IQ1M_DELTA * static_cast<float>(sumi_delta));
  }
  return sum;
}

float dot_iq4_xs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_iq4_xs>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    const float d4d8 = fp16_to_fp32(x.d) * y.d;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      // 6-bit scale: a nibble of scales_l plus two bits of scales_h, offset by 32.
      const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x.scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d4d8 * static_cast<float>(ls - 32);
      const uint8_t* qs = x.qs + 16 * ib;
      const int8_t* q8 = y.qs + 32 * ib;
      int lo = 0;
      int hi = 0;
      for (int j = 0; j < 16; ++j) {
        lo += q8[j] * kvalues_iq4nl[qs[j] & 0xF];
        hi += q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
      }
      sum += dl * static_cast<float>(lo + hi);
    }
  }
  return sum;
}

}  // namespace strata::format::detail
