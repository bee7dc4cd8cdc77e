// Dot products of the K-quants with Q8_K activations, in the order of ggml's ggml_vec_dot_q*_K_q8_K_generic.
// Q3_K..Q6_K decode a super-block to 256 small integers, sum scale * q8 * q exactly in 8 integer lanes
// (value p in lane p % 8), and add each lane times d to its own float accumulator; the 8 accumulators are
// summed at the very end. Q2_K adds one float term per super-block.
#include <cstring>

#include "dot_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {
namespace {

constexpr int kLanes = 8;

// The float side of ggml's lane scheme: one accumulator per lane across all super-blocks.
struct LaneAccumulator {
  float sums[kLanes] = {};

  // Adds d * sum over p of scales[p / sub] * q8[p] * q[p], lane by lane.
  void add(float d, const int8_t* q, const int8_t* q8, const int* scales, int sub) {
    int32_t lanes[kLanes] = {};
    for (int p = 0; p < QK_K; ++p) lanes[p % kLanes] += scales[p / sub] * (q8[p] * q[p]);
    for (int l = 0; l < kLanes; ++l) sums[l] += d * static_cast<float>(lanes[l]);
  }

  float total(float start) const {
    for (float s : sums) start += s;
    return start;
  }
};

// The 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K: sub-blocks 0-3 in the low 6 bits of bytes j and
// j + 4, sub-blocks 4-7 as a nibble in byte j + 4 plus the top two bits of bytes j - 4 (scale) and j (min).
void k4_scale_min(const uint8_t* packed, int j, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0xF) | (packed[j - 4] >> 6) << 4;
    min = (packed[j + 4] >> 4) | (packed[j] >> 6) << 4;
  }
}

// sum_j bsums[j] * mins[j / 2]: the min term of Q4_K / Q5_K, with Q8_K's per-16 sums of the activations.
int k4_min_term(const block_q8_K& y, const int* mins) {
  int sum = 0;
  for (int j = 0; j < QK_K / 16; ++j) sum += y.bsums[j] * mins[j / 2];
  return sum;
}

}  // namespace

float dot_q2_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q2_K>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // Each scale byte: low nibble scales one group of 16, high nibble is that group's min.
    int min_term = 0;
    for (int j = 0; j < QK_K / 16; ++j) min_term += y.bsums[j] * (x.scales[j] >> 4);
    // Value 128h + 32s + l is bits 2s..2s+1 of qs[32h + l]; group of 16 is p / 16.
    int isum = 0;
    for (int g = 0; g < QK_K / 16; ++g) {
      int group = 0;
      for (int k = 0; k < 16; ++k) {
        const int p = 16 * g + k;
        const int q = (x.qs[32 * (p / 128) + p % 32] >> (2 * ((p / 32) % 4))) & 3;
        group += y.qs[p] * q;
      }
      isum += (x.scales[g] & 0xF) * group;
    }
    const float dall = y.d * fp16_to_fp32(x.d);
    const float dmin = y.d * fp16_to_fp32(x.dmin);
    sum += dall * static_cast<float>(isum) - dmin * static_cast<float>(min_term);
  }
  return sum;
}

float dot_q3_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  LaneAccumulator acc;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q3_K>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // Value 128h + 32s + l: 2 low bits from qs[32h + l] at bit 2s, minus 4 unless bit 4h + s of hmask[l] is set.
    int8_t q[QK_K];
    for (int p = 0; p < QK_K; ++p) {
      const int h = p / 128, s = (p / 32) % 4, l = p % 32;
      const int low = (x.qs[32 * h + l] >> (2 * s)) & 3;
      q[p] = static_cast<int8_t>(low - ((x.hmask[l] >> (4 * h + s)) & 1 ? 0 : 4));
    }
    // 16 signed 6-bit scales: low nibbles in bytes 0-7 (j < 8: low half, else high half of byte j - 8),
    // top two bits in bytes 8-11 (byte 8 + j % 4, bits 2 * (j / 4)).
    int scales[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) {
      const int low = j < 8 ? x.scales[j] & 0xF : x.scales[j - 8] >> 4;
      const int high = (x.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (low | high << 4) - 32;
    }
    acc.add(fp16_to_fp32(x.d) * y.d, q, y.qs, scales, 16);
  }
  return acc.total(0.0f);
}

float dot_q4_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  LaneAccumulator acc;
  float min_sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q4_K>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // Value 64n + l is the low nibble of qs[32n + l], 64n + 32 + l its high nibble.
    int8_t q[QK_K];
    for (int p = 0; p < QK_K; ++p) {
      q[p] = static_cast<int8_t>((x.qs[32 * (p / 64) + p % 32] >> (4 * ((p / 32) % 2))) & 0xF);
    }
    int scales[QK_K / 32], mins[QK_K / 32];
    for (int j = 0; j < QK_K / 32; ++j) k4_scale_min(x.scales, j, scales[j], mins[j]);
    acc.add(fp16_to_fp32(x.d) * y.d, q, y.qs, scales, 32);
    min_sum -= fp16_to_fp32(x.dmin) * y.d * static_cast<float>(k4_min_term(y, mins));
  }
  return acc.total(min_sum);
}

float dot_q5_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  LaneAccumulator acc;
  float min_sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q5_K>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // As Q4_K, plus 16 when bit p / 32 of qh[p % 32] is set.
    int8_t q[QK_K];
    for (int p = 0; p < QK_K; ++p) {
      const int low = (x.qs[32 * (p / 64) + p % 32] >> (4 * ((p / 32) % 2))) & 0xF;
      q[p] = static_cast<int8_t>(low + ((x.qh[p % 32] >> (p / 32)) & 1) * 16);
    }
    int scales[QK_K / 32], mins[QK_K / 32];
    for (int j = 0; j < QK_K / 32; ++j) k4_scale_min(x.scales, j, scales[j], mins[j]);
    acc.add(fp16_to_fp32(x.d) * y.d, q, y.qs, scales, 32);
    min_sum -= fp16_to_fp32(x.dmin) * y.d * static_cast<float>(k4_min_term(y, mins));
  }
  return acc.total(min_sum);
}

float dot_q6_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb) {
  LaneAccumulator acc;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q6_K>(w, i);
    const auto y = load_block<block_q8_K>(a, i);
    // Value 128h + 32s + l: a nibble of ql[64h + 32(s % 2) + l] (high nibble for s >= 2) and bits 2s..2s+1 of
    // qh[32h + l] on top, minus 32.
    int8_t q[QK_K];
    for (int p = 0; p < QK_K; ++p) {
      const int h = p / 128, s = (p / 32) % 4, l = p % 32;
      const int low = (x.ql[64 * h + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0xF;
      const int high = (x.qh[32 * h + l] >> (2 * s)) & 3;
      q[p] = static_cast<int8_t>((low | high << 4) - 32);
    }
    int scales[QK_K / 16];
    for (int j = 0; j < QK_K / 16; ++j) scales[j] = x.scales[j];
    acc.add(fp16_to_fp32(x.d) * y.d, q, y.qs, scales, 16);
  }
  return acc.total(0.0f);
}

}  // namespace strata::format::detail
