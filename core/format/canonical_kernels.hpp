// The per-type decompositions behind canonical_decompose (canonical_dot.cpp dispatches on the type): each splits
// block `index` of raw bytes into integer weights g_i and sub-block scales c_k (and offsets b_k), computing c_k
// and b_k with the float operations of the type's dequantizer (dequantize_*.cpp), values in element order.
#pragma once

#include <cstdint>

#include "strata/format/canonical.hpp"

namespace strata::format::kernels {

// canonical_legacy.cpp: the 32-value formats, one sub-block per block.
void decompose_q4_0(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q4_1(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q5_0(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q5_1(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q8_0(const void* blocks, int64_t index, CanonicalBlock& out);

// canonical_kquants.cpp
void decompose_q2_K(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q3_K(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q4_K(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q5_K(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_q6_K(const void* blocks, int64_t index, CanonicalBlock& out);

// canonical_iquants.cpp
void decompose_iq2_xxs(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq2_xs(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq2_s(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq3_xxs(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq3_s(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq1_s(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq1_m(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq4_nl(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_iq4_xs(const void* blocks, int64_t index, CanonicalBlock& out);

// canonical_other.cpp: MXFP4 and the ternary formats.
void decompose_mxfp4(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_tq1_0(const void* blocks, int64_t index, CanonicalBlock& out);
void decompose_tq2_0(const void* blocks, int64_t index, CanonicalBlock& out);

}  // namespace strata::format::kernels
