// The per-type decoders behind dequantize_row (dequantize.cpp dispatches on the type). Each decodes
// `nblocks` consecutive blocks from raw bytes into out; inputs are already validated.
#pragma once

#include <cstdint>

namespace strata::format::kernels {

// dequantize_other.cpp: plain float types, MXFP4 and the ternary formats.
void dequantize_f32(const void* blocks, float* out, int64_t nblocks);
void dequantize_f16(const void* blocks, float* out, int64_t nblocks);
void dequantize_bf16(const void* blocks, float* out, int64_t nblocks);
void dequantize_mxfp4(const void* blocks, float* out, int64_t nblocks);
void dequantize_tq1_0(const void* blocks, float* out, int64_t nblocks);
void dequantize_tq2_0(const void* blocks, float* out, int64_t nblocks);

// dequantize_legacy.cpp: the 32-value formats.
void dequantize_q4_0(const void* blocks, float* out, int64_t nblocks);
void dequantize_q4_1(const void* blocks, float* out, int64_t nblocks);
void dequantize_q5_0(const void* blocks, float* out, int64_t nblocks);
void dequantize_q5_1(const void* blocks, float* out, int64_t nblocks);
void dequantize_q8_0(const void* blocks, float* out, int64_t nblocks);

// dequantize_kquants.cpp: 256-value super-blocks with packed sub-block scales.
void dequantize_q2_K(const void* blocks, float* out, int64_t nblocks);
void dequantize_q3_K(const void* blocks, float* out, int64_t nblocks);
void dequantize_q4_K(const void* blocks, float* out, int64_t nblocks);
void dequantize_q5_K(const void* blocks, float* out, int64_t nblocks);
void dequantize_q6_K(const void* blocks, float* out, int64_t nblocks);
void dequantize_q8_K(const void* blocks, float* out, int64_t nblocks);

// dequantize_iquants.cpp: the lattice (grid) formats and the non-linear 4-bit ones.
void dequantize_iq2_xxs(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq2_xs(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq2_s(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq3_xxs(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq3_s(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq1_s(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq1_m(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq4_nl(const void* blocks, float* out, int64_t nblocks);
void dequantize_iq4_xs(const void* blocks, float* out, int64_t nblocks);

}  // namespace strata::format::kernels
