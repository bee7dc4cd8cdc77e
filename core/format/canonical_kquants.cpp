// The K-quants decomposed. Sub-block k covers values [k * sub_elems, (k + 1) * sub_elems) of the super-block;
// c_k is `d * scale` and b_k is `-(dmin * min)`, the products dequantize_kquants.cpp forms (it subtracts the
// rounded dmin * min, which is adding its negation).
#include "block_io.hpp"
#include "block_scales.hpp"
#include "canonical_kernels.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::kernels {
void decompose_q2_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q2_K>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  const float dmin = fp16_to_fp32(b.dmin);
  int sub = 0;
  int32_t* g = out.g;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part, ++sub) {
        out.c[sub] = d * static_cast<float>(b.scales[sub] & 0x0f);
        out.b[sub] = -(dmin * static_cast<float>(b.scales[sub] >> 4));
        for (int l = 0; l < 16; ++l) *g++ = (q[16 * part + l] >> shift) & 3;
      }
    }
  }
}

void decompose_q3_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q3_K>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  int sub = 0;
  int32_t* g = out.g;
  uint8_t mask = 1;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2, mask = static_cast<uint8_t>(mask << 1)) {
      for (int part = 0; part < 2; ++part, ++sub) {
        out.c[sub] = d * static_cast<float>(q3k_scale(sub, b.scales));
        out.b[sub] = 0.0f;
        for (int l = 16 * part; l < 16 * part + 16; ++l) *g++ = ((q[l] >> shift) & 3) - ((b.hmask[l] & mask) ? 0 : 4);
      }
    }
  }
}

// Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scales and mins (scale_min_k4); group k's 32 bytes of qs hold
// sub-block 2k in the low nibbles and 2k + 1 in the high ones. Q5_K adds a fifth bit, bit `sub` of qh[l].
template <class Block, bool kFifthBit>
void decompose_q45_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<Block>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  const float dmin = fp16_to_fp32(b.dmin);
  for (int k = 0; k < 4; ++k) {
    const uint8_t* q = b.qs + 32 * k;
    for (int nib = 0; nib < 2; ++nib) {
      const int sub = 2 * k + nib;
      const KScaleMin sm = k4_scale_min(sub, b.scales);
      out.c[sub] = d * static_cast<float>(sm.scale);
      out.b[sub] = -(dmin * static_cast<float>(sm.min));
      for (int l = 0; l < 32; ++l) {
        const int low4 = nib == 0 ? (q[l] & 0x0f) : (q[l] >> 4);
        int high = 0;
        if constexpr (kFifthBit) high = (b.qh[l] >> sub) & 1 ? 16 : 0;
        out.g[32 * sub + l] = low4 + high;
      }
    }
  }
}

void decompose_q4_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  decompose_q45_K<block_q4_K, false>(blocks, index, out);
}

void decompose_q5_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  decompose_q45_K<block_q5_K, true>(blocks, index, out);
}

void decompose_q6_K(const void* blocks, int64_t index, CanonicalBlock& out) {
  const auto b = load_block<block_q6_K>(blocks, index);
  const float d = fp16_to_fp32(b.d);
  // Sub-block k (16 values) uses scales[k]: dequantize_kquants.cpp multiplies d * scale first.
  for (int k = 0; k < QK_K / 16; ++k) {
    out.c[k] = d * static_cast<float>(b.scales[k]);
    out.b[k] = 0.0f;
  }
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    int32_t* g = out.g + 128 * half;
    for (int l = 0; l < 32; ++l) {
      g[l] = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
      g[l + 32] = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      g[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      g[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
}

}  // namespace strata::format::kernels
