// Dot products of the 32-value block formats with Q8_0 / Q8_1 activations, in the order of ggml's
// ggml_vec_dot_<type>_<act>_generic: an exact integer sum per block, then one float update per block.
#include "dot_kernels.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/tables.hpp"

namespace strata::format::detail {
namespace {

// Sum over a block of q8[j] * value(j) where the weight's 32 values sit in 16 bytes, value j in the low nibble of
// byte j and value j + 16 in the high nibble; `decode(nibble, j)` gives the integer weight.
template <typename Decode>
int nibble_block_sum(const uint8_t* qs, const int8_t* q8, Decode decode) {
  int lo = 0;
  int hi = 0;
  for (int j = 0; j < 16; ++j) {
    lo += decode(qs[j] & 0xF, j) * q8[j];
    hi += decode(qs[j] >> 4, j + 16) * q8[j + 16];
  }
  return lo + hi;
}

uint32_t load_qh(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return bits;
}

// The fifth bit of Q5_0 / Q5_1 value j (bit j of the block's 32-bit qh), as the value 16 or 0.
int fifth_bit(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1) << 4; }

}  // namespace

float dot_q4_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q4_0>(w, i);
    const auto y = load_block<block_q8_0>(a, i);
    const int sumi = nibble_block_sum(x.qs, y.qs, [](int q, int) { return q - 8; });
    sum += static_cast<float>(sumi) * fp16_to_fp32(x.d) * fp16_to_fp32(y.d);
  }
  return sum;
}

float dot_q4_1_q8_1(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q4_1>(w, i);
    const auto y = load_block<block_q8_1>(a, i);
    const int sumi = nibble_block_sum(x.qs, y.qs, [](int q, int) { return q; });
    // y.s = d_y * sum(q8) folds the weight's offset m into one product.
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi) + fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

float dot_q5_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q5_0>(w, i);
    const auto y = load_block<block_q8_0>(a, i);
    const uint32_t qh = load_qh(x.qh);
    const int sumi = nibble_block_sum(x.qs, y.qs, [qh](int q, int j) { return (q | fifth_bit(qh, j)) - 16; });
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi);
  }
  return sum;
}

float dot_q5_1_q8_1(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q5_1>(w, i);
    const auto y = load_block<block_q8_1>(a, i);
    const uint32_t qh = load_qh(x.qh);
    const int sumi = nibble_block_sum(x.qs, y.qs, [qh](int q, int j) { return q | fifth_bit(qh, j); });
    sum += (fp16_to_fp32(x.d) * fp16_to_fp32(y.d)) * static_cast<float>(sumi) + fp16_to_fp32(x.m) * fp16_to_fp32(y.s);
  }
  return sum;
}

float dot_q8_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_q8_0>(w, i);
    const auto y = load_block<block_q8_0>(a, i);
    int sumi = 0;
    for (int j = 0; j < QK8_0; ++j) sumi += x.qs[j] * y.qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_fp32(x.d) * fp16_to_fp32(y.d));
  }
  return sum;
}

float dot_iq4_nl_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_iq4_nl>(w, i);
    const auto y = load_block<block_q8_0>(a, i);
    const float d = fp16_to_fp32(y.d) * fp16_to_fp32(x.d);
    sum += d * static_cast<float>(nibble_block_sum(x.qs, y.qs, [](int q, int) { return int{kvalues_iq4nl[q]}; }));
  }
  return sum;
}

float dot_mxfp4_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb) {
  float sum = 0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = load_block<block_mxfp4>(w, i);
    const auto y = load_block<block_q8_0>(a, i);
    const float d = fp16_to_fp32(y.d) * e8m0_to_fp32_half(x.e);
    sum += d * static_cast<float>(nibble_block_sum(x.qs, y.qs, [](int q, int) { return int{kvalues_mxfp4[q]}; }));
  }
  return sum;
}

}  // namespace strata::format::detail
