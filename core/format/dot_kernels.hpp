// One reference dot product per weight type (internal to strata_format; dot.cpp dispatches). Each takes the raw
// bytes of nb weight blocks and of the activation blocks covering the same values.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::format::detail {

// Block i of a byte array, copied out so that the caller's buffer needs no alignment.
template <typename Block>
Block load_block(const unsigned char* base, int64_t i) {
  Block b;
  std::memcpy(&b, base + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

// Against Q8_0 (nb blocks of 32).
float dot_q4_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q5_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q8_0_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq4_nl_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_mxfp4_q8_0(const unsigned char* w, const unsigned char* a, int64_t nb);
// Against Q8_1 (nb blocks of 32).
float dot_q4_1_q8_1(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q5_1_q8_1(const unsigned char* w, const unsigned char* a, int64_t nb);
// Against Q8_K (nb super-blocks of 256).
float dot_q2_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q3_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q4_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q5_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_q6_k_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq2_xxs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq2_xs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq2_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq3_xxs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq3_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq1_s_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq1_m_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_iq4_xs_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_tq1_0_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);
float dot_tq2_0_q8_k(const unsigned char* w, const unsigned char* a, int64_t nb);

}  // namespace strata::format::detail
