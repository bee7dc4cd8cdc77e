// ggml's block layouts, byte for byte (packed, little-endian; ggml-common.h static-asserts no padding).
// Field names follow ggml's so a reader can check them against the format's documentation.
#pragma once

#include <cstdint>

namespace strata::format {

using half_bits = uint16_t;  // IEEE binary16, as stored
using bf16_bits = uint16_t;  // top 16 bits of a binary32

constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
constexpr int QK_K = 256;
constexpr int K_SCALE_SIZE = 12;
constexpr int QK4_NL = 32, QK_MXFP4 = 32;

struct block_q4_0 { half_bits d; uint8_t qs[QK4_0 / 2]; };
struct block_q4_1 { half_bits d; half_bits m; uint8_t qs[QK4_1 / 2]; };
struct block_q5_0 { half_bits d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct block_q5_1 { half_bits d; half_bits m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct block_q8_0 { half_bits d; int8_t qs[QK8_0]; };
struct block_q8_1 { half_bits d; half_bits s; int8_t qs[QK8_1]; };  // s = d * sum(qs)

struct block_q2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; half_bits d; half_bits dmin; };
struct block_q3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; half_bits d; };
struct block_q4_K { half_bits d; half_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct block_q5_K { half_bits d; half_bits dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
struct block_q6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; half_bits d; };
struct block_q8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

struct block_iq2_xxs { half_bits d; uint16_t qs[QK_K / 8]; };
struct block_iq2_xs { half_bits d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; };
struct block_iq2_s { half_bits d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; };
struct block_iq3_xxs { half_bits d; uint8_t qs[3 * QK_K / 8]; };
struct block_iq3_s { half_bits d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; };
struct block_iq1_s { half_bits d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; };
struct block_iq1_m { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; };  // d in scales' top nibbles
struct block_iq4_nl { half_bits d; uint8_t qs[QK4_NL / 2]; };
struct block_iq4_xs { half_bits d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
struct block_tq1_0 { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; half_bits d; };
struct block_tq2_0 { uint8_t qs[QK_K / 4]; half_bits d; };
struct block_mxfp4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };  // e: E8M0 shared exponent

static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22);
static_assert(sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34 && sizeof(block_q8_1) == 36);
static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110 && sizeof(block_q4_K) == 144);
static_assert(sizeof(block_q5_K) == 176 && sizeof(block_q6_K) == 210 && sizeof(block_q8_K) == 292);
static_assert(sizeof(block_iq2_xxs) == 66 && sizeof(block_iq2_xs) == 74 && sizeof(block_iq2_s) == 82);
static_assert(sizeof(block_iq3_xxs) == 98 && sizeof(block_iq3_s) == 110 && sizeof(block_iq1_s) == 50);
static_assert(sizeof(block_iq1_m) == 56 && sizeof(block_iq4_nl) == 18 && sizeof(block_iq4_xs) == 136);
static_assert(sizeof(block_tq1_0) == 54 && sizeof(block_tq2_0) == 66 && sizeof(block_mxfp4) == 17);

}  // namespace strata::format
