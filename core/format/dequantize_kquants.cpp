// The K-quants: 256-value super-blocks split into 16- or 32-value sub-blocks whose scales (and mins) are
// themselves quantized against the super-block's f16 d (and dmin). Value = d*scale*q - dmin*min, with the
// products formed and rounded in the order ggml forms them.
#include "block_io.hpp"
#include "block_scales.hpp"
#include "dequantize_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format::kernels {
void dequantize_q2_K(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_q2_K>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    int sub = 0;
    // Two halves of 128 values, each reading 32 bytes of qs four times at shifts 0, 2, 4, 6.
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part, ++sub) {
          const float dl = d * static_cast<float>(b.scales[sub] & 0x0f);
          const float ml = dmin * static_cast<float>(b.scales[sub] >> 4);
          for (int l = 0; l < 16; ++l) {
            const int qv = (q[16 * part + l] >> shift) & 3;
            *out++ = dl * static_cast<float>(qv) - ml;
          }
        }
      }
    }
  }
}

void dequantize_q3_K(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_q3_K>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    int sub = 0;
    uint8_t mask = 1;  // hmask bit of the current 32-value group; a clear bit subtracts 4
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2, mask = static_cast<uint8_t>(mask << 1)) {
        for (int part = 0; part < 2; ++part, ++sub) {
          const float dl = d * static_cast<float>(q3k_scale(sub, b.scales));
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int qv = ((q[l] >> shift) & 3) - ((b.hmask[l] & mask) ? 0 : 4);
            *out++ = dl * static_cast<float>(qv);
          }
        }
      }
    }
  }
}

// Q4_K and Q5_K: each 64 values are 32 bytes of qs, low nibbles first (sub-block 2k), then high nibbles (sub-block
// 2k + 1), with 6-bit scales and mins; Q5_K adds a fifth bit: bit 2k of qh[l] for the low nibbles of group k, bit
// 2k + 1 for the high ones.
template <class Block, bool kFifthBit>
void dequantize_q45_K(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<Block>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int k = 0; k < 4; ++k) {
      const uint8_t* q = b.qs + 32 * k;
      for (int nib = 0; nib < 2; ++nib) {
        const KScaleMin sm = k4_scale_min(2 * k + nib, b.scales);
        const float dl = d * static_cast<float>(sm.scale), ml = dmin * static_cast<float>(sm.min);
        for (int l = 0; l < 32; ++l) {
          int qv = nib == 0 ? (q[l] & 0x0f) : (q[l] >> 4);
          if constexpr (kFifthBit) qv += (b.qh[l] >> (2 * k + nib)) & 1 ? 16 : 0;
          *out++ = dl * static_cast<float>(qv) - ml;
        }
      }
    }
  }
}

void dequantize_q4_K(const void* blocks, float* out, int64_t nblocks) {
  dequantize_q45_K<block_q4_K, false>(blocks, out, nblocks);
}

void dequantize_q5_K(const void* blocks, float* out, int64_t nblocks) {
  dequantize_q45_K<block_q5_K, true>(blocks, out, nblocks);
}

void dequantize_q6_K(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<block_q6_K>(blocks, i);
    const float d = fp16_to_fp32(b.d);
    // Each 128 values use 64 bytes of ql (low nibbles) and 32 of qh (two bits per value, four values per byte).
    for (int half = 0; half < 2; ++half, out += 128) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        out[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q1);
        out[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
        out[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
        out[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void dequantize_q8_K(const void* blocks, float* out, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, out += QK_K) {
    const auto b = load_block<block_q8_K>(blocks, i);
    for (int j = 0; j < QK_K; ++j) out[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace strata::format::kernels
