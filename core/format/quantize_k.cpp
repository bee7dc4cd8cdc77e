// Q4_K, Q5_K and Q6_K, as ggml's quantize_row_q{4,5,6}_K_ref: fit each sub-block, quantize the sub-block scales
// (and mins) against the super-block's largest one, then requantize the values with the scales as decoded.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quantize_kernels.hpp"
#include "quantize_scale_fit.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::detail {
namespace {

constexpr int kSub45 = 32;  // values per sub-block of Q4_K / Q5_K
constexpr int kSubs45 = QK_K / kSub45;

// Q4_K and Q5_K share everything but the quant range (15 or 31) and the search grid of fit_scale_and_min.
struct AsymmetricK {
  int nmax;
  float rmin;
  int nstep;
};

// Fills `scales` (12 bytes: 6-bit scale and 6-bit min per sub-block), d, dmin, and the quants L[256].
void quantize_asymmetric_k(const float* x, const AsymmetricK& cfg, uint8_t* packed_scales, half_bits& d_out,
                           half_bits& dmin_out, uint8_t* L) {
  float scales[kSubs45];
  float mins[kSubs45];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kSubs45; ++j) {
    const float* xs = x + kSub45 * j;
    // Weights favour large values, offset by the sub-block's RMS so that small values still count.
    float sum_x2 = 0;
    for (int l = 0; l < kSub45; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub45);
    float weights[kSub45];
    for (int l = 0; l < kSub45; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_and_min(kSub45, cfg.nmax, xs, weights, L + kSub45 * j, &mins[j], cfg.rmin, 0.1f, cfg.nstep,
                                  FitError::squared);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(packed_scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < kSubs45; ++j) {
    // ggml stores nearest_int in a uint8_t before clipping; kept, so an out-of-range value clips the same way.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    // Sub-blocks 0-3 keep 6 bits in bytes 0-7; 4-7 keep their low nibbles in bytes 8-11 and their top two
    // bits in the spare top bits of bytes 0-7.
    if (j < 4) {
      packed_scales[j] = ls;
      packed_scales[j + 4] = lm;
    } else {
      packed_scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | (lm & 0xF) << 4);
      packed_scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed_scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  d_out = fp32_to_fp16(max_scale / 63.f);
  dmin_out = fp32_to_fp16(max_min / 63.f);

  const float d = fp16_to_fp32(d_out);
  const float dmin = fp16_to_fp32(dmin_out);
  for (int j = 0; j < kSubs45; ++j) {
    uint8_t sc, m;
    if (j < 4) {
      sc = packed_scales[j] & 63;
      m = packed_scales[j + 4] & 63;
    } else {
      sc = static_cast<uint8_t>((packed_scales[j + 4] & 0xF) | (packed_scales[j - 4] >> 6) << 4);
      m = static_cast<uint8_t>((packed_scales[j + 4] >> 4) | (packed_scales[j] >> 6) << 4);
    }
    const float ds = d * sc;
    if (ds == 0) continue;  // keeps the search's quants: the decoder multiplies them by 0 anyway
    const float dm = dmin * m;
    for (int l = 0; l < kSub45; ++l) {
      L[kSub45 * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[kSub45 * j + l] + dm) / ds), 0, cfg.nmax));
    }
  }
}

}  // namespace

void quantize_block_q4_k(const float* x, block_q4_K& y) {
  uint8_t L[QK_K];
  quantize_asymmetric_k(x, AsymmetricK{15, -1.f, 20}, y.scales, y.d, y.dmin, L);
  // Each 32 bytes hold 64 values: the first 32 in the low nibbles, the next 32 in the high ones.
  for (int j = 0; j < QK_K; j += 64) {
    for (int l = 0; l < 32; ++l) y.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | L[j + l + 32] << 4);
  }
}

void quantize_block_q5_k(const float* x, block_q5_K& y) {
  uint8_t L[QK_K];
  quantize_asymmetric_k(x, AsymmetricK{31, -0.5f, 15}, y.scales, y.d, y.dmin, L);
  // Low nibbles as Q4_K; the fifth bit of value n*64 + l goes to bit 2n of qh[l], of n*64 + 32 + l to bit 2n+1.
  std::memset(y.qh, 0, sizeof y.qh);
  for (int n = 0; n < QK_K / 64; ++n) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = L[64 * n + l];
      const uint8_t hi = L[64 * n + l + 32];
      y.qs[32 * n + l] = static_cast<uint8_t>((lo & 0xF) | (hi & 0xF) << 4);
      y.qh[l] |= static_cast<uint8_t>((lo >> 4) << (2 * n) | (hi >> 4) << (2 * n + 1));
    }
  }
}

void quantize_block_q6_k(const float* x, block_q6_K& y) {
  constexpr int kSub16 = 16;
  float scales[QK_K / kSub16];
  int8_t L[QK_K];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < QK_K / kSub16; ++ib) {
    scales[ib] = fit_signed_scale(kSub16, 32, x + kSub16 * ib, L + kSub16 * ib);
    if (std::fabs(scales[ib]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < 1e-15f) {
    std::memset(&y, 0, sizeof y);
    return;
  }

  // The largest sub-block scale maps to -128, keeping its sign, like the values inside a sub-block.
  const float iscale = -128.f / max_scale;
  y.d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < QK_K / kSub16; ++ib) {
    y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  }
  const float d = fp16_to_fp32(y.d);
  for (int j = 0; j < QK_K / kSub16; ++j) {
    const float ds = d * y.scales[j];
    if (ds == 0) continue;
    for (int l = 0; l < kSub16; ++l) {
      L[kSub16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(x[kSub16 * j + l] / ds), -32, 31) + 32);
    }
  }

  // Per 128 values: low nibbles of values 0-31 | 64-95 in ql[0..31], of 32-63 | 96-127 in ql[32..63];
  // the two high bits of values l, l+32, l+64, l+96 in qh[l] from bit 0 up.
  for (int h = 0; h < QK_K / 128; ++h) {
    const int8_t* Lh = L + 128 * h;
    uint8_t* ql = y.ql + 64 * h;
    uint8_t* qh = y.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | (Lh[l + 64] & 0xF) << 4);
      ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | (Lh[l + 96] & 0xF) << 4);
      qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 |
                                   (Lh[l + 96] >> 4) << 6);
    }
  }
}

}  // namespace strata::format::detail
