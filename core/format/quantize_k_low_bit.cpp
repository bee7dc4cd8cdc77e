// Q2_K and Q3_K, as ggml's quantize_row_q{2,3}_K_ref: 16 sub-blocks of 16 values, each fitted on its own, with
// 4-bit (Q2_K: scale and min) or 6-bit signed (Q3_K) sub-block scales relative to the super-block's largest.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantize_kernels.hpp"
#include "quantize_scale_fit.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {
namespace {

constexpr int kSub23 = 16;  // values per sub-block of Q2_K / Q3_K
constexpr int kSubs23 = QK_K / kSub23;

// Both formats keep 2 low bits per value in qs: value 128h + 32s + l at bits 2s..2s+1 of qs[32h + l].
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < QK_K / 128; ++h) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* Lh = L + 128 * h;
      qs[32 * h + l] = static_cast<uint8_t>(Lh[l] | Lh[l + 32] << 2 | Lh[l + 64] << 4 | Lh[l + 96] << 6);
    }
  }
}

}  // namespace

void quantize_block_q2_k(const float* x, block_q2_K& y) {
  uint8_t L[QK_K];
  float scales[kSubs23];
  float mins[kSubs23];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kSubs23; ++j) {
    float weights[kSub23];
    for (int l = 0; l < kSub23; ++l) weights[l] = std::fabs(x[kSub23 * j + l]);
    // With only 4 levels, ggml scores the grids by absolute rather than squared error.
    scales[j] = fit_scale_and_min(kSub23, 3, x + kSub23 * j, weights, L + kSub23 * j, &mins[j], -0.5f, 0.1f, 15,
                                  FitError::absolute);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // Low nibble: the scale, high nibble: the min, each in 1/15ths of the largest (not clipped: the largest
  // rounds to 15 at most).
  constexpr float kLevels = 15.f;
  std::memset(y.scales, 0, sizeof y.scales);
  y.d = fp32_to_fp16(0.f);
  y.dmin = fp32_to_fp16(0.f);
  if (max_scale > 0) {
    const float iscale = kLevels / max_scale;
    for (int j = 0; j < kSubs23; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    y.d = fp32_to_fp16(max_scale / kLevels);
  }
  if (max_min > 0) {
    const float iscale = kLevels / max_min;
    for (int j = 0; j < kSubs23; ++j) y.scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
    y.dmin = fp32_to_fp16(max_min / kLevels);
  }

  const float d = fp16_to_fp32(y.d);
  const float dmin = fp16_to_fp32(y.dmin);
  for (int j = 0; j < kSubs23; ++j) {
    const float ds = d * static_cast<float>(y.scales[j] & 0xF);
    if (ds == 0) continue;
    const float dm = dmin * static_cast<float>(y.scales[j] >> 4);
    for (int l = 0; l < kSub23; ++l) {
      L[kSub23 * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[kSub23 * j + l] + dm) / ds), 0, 3));
    }
  }
  pack_2bit(L, y.qs);
}

void quantize_block_q3_k(const float* x, block_q3_K& y) {
  int8_t L[QK_K];
  float scales[kSubs23];
  float max_scale = 0;
  float amax = 0;
  for (int j = 0; j < kSubs23; ++j) {
    scales[j] = fit_signed_scale_by_moves(kSub23, 4, x + kSub23 * j, L + kSub23 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }

  // 16 signed 6-bit scales + 32: low nibbles in bytes 0-7 (sub-blocks 8-15 in the high halves), top two bits
  // in bytes 8-11 (byte 8 + j % 4, bits 2 * (j / 4)).
  std::memset(y.scales, 0, sizeof y.scales);
  if (max_scale != 0) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < kSubs23; ++j) {
      const int l = std::clamp(static_cast<int>(static_cast<int8_t>(nearest_int(iscale * scales[j]))), -32, 31) + 32;
      if (j < 8) {
        y.scales[j] = static_cast<uint8_t>(l & 0xF);
      } else {
        y.scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
      }
      y.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    y.d = fp32_to_fp16(1 / iscale);
  } else {
    y.d = fp32_to_fp16(0.f);
  }

  const float d = fp16_to_fp32(y.d);
  for (int j = 0; j < kSubs23; ++j) {
    const int low = j < 8 ? y.scales[j] & 0xF : y.scales[j - 8] >> 4;
    const int sc = (low | ((y.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
    const float ds = d * static_cast<float>(sc);
    if (ds == 0) continue;
    for (int l = 0; l < kSub23; ++l) {
      L[kSub23 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(x[kSub23 * j + l] / ds), -4, 3) + 4);
    }
  }

  // The third bit of value p goes to bit p / 32 of hmask[p % 32]; the low two bits as Q2_K.
  std::memset(y.hmask, 0, sizeof y.hmask);
  uint8_t low_bits[QK_K];
  for (int p = 0; p < QK_K; ++p) {
    if (L[p] > 3) y.hmask[p % 32] |= static_cast<uint8_t>(1 << (p / 32));
    low_bits[p] = static_cast<uint8_t>(L[p] & 3);
  }
  pack_2bit(low_bits, y.qs);
}

}  // namespace strata::format::detail
