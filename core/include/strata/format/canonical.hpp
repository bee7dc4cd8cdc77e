// The canonical arithmetic (docs/CANONICAL_ARITHMETIC.md): the exact float operations every backend uses for a
// weight row's dot product, SwiGLU and a whole expert, so that a row's bits do not depend on where it was
// computed. These are the plain scalar definitions; the reference backend calls them and every plugin kernel is
// compared against them bit for bit. Built with -ffp-contract=off: each fma below is an explicit fmaf.
#pragma once

#include <cstdint>

#include "strata/format/blocks.hpp"
#include "strata/format/types.hpp"

namespace strata::format {

// Section 5: the one exponential. NaN stays NaN, overflow is +inf, underflow +0 (through the subnormals).
float exp_c(float x);
// x / (1.0f + exp_c(-x)): one negation, one exp_c, one addition, one division.
float silu_c(float x);
// Section 3 step 3: silu_c(g) * u.
inline float swiglu_c(float g, float u) { return silu_c(g) * u; }
// Section 3 step 3, gpt-oss's clamped form: gc = min(g, limit), uc = clamp(u, -limit, limit), written so that a NaN
// stays NaN (fminf would drop it), then (gc / (1 + exp_c(-(alpha * gc)))) * (uc + 1).
inline float swiglu_oai_c(float g, float u, float alpha, float limit) {
  const float gc = limit < g ? limit : g;
  const float lo = u < -limit ? -limit : u;
  const float uc = limit < lo ? limit : lo;
  return (gc / (1.0f + exp_c(-(alpha * gc)))) * (uc + 1.0f);
}

// ---- section 2: quantized weights against Q8_1 activations ------------------------------------------------

// Whether canonical_dot takes `wtype` as the weight type: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, the IQ
// types, MXFP4, TQ1_0 and TQ2_0.
bool has_canonical_dot(GgmlType wtype);

// The shape of a type's decomposition w_i = c_k * g_i + b_k.
struct CanonicalLayout {
  int block_elems;  // values per weight block (32 or 256): a block covers block_elems / 32 spans
  int sub_elems;    // values per sub-block k (16 or 32): one or two sub-blocks per 32-value span
  bool has_offset;  // b_k is part of the type (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K); otherwise b_k = 0 and unused
};
// Throws strata::Error when has_canonical_dot(wtype) is false.
CanonicalLayout canonical_layout(GgmlType wtype);

// One weight block, decomposed: g[i] for i < block_elems, c[k] and b[k] for k < block_elems / sub_elems.
struct CanonicalBlock {
  int32_t g[QK_K];
  float c[QK_K / 16];
  float b[QK_K / 16];
};
// Decomposes block `index` of `blocks` (raw tensor bytes, any alignment). c_k and b_k are computed with the float
// operations of the type's dequantizer, so c[k] * g[i] + b[k] (rounded once each) is dequantize_row's value.
void canonical_decompose(GgmlType wtype, const void* blocks, int64_t index, CanonicalBlock& out);

// Section 2: the dot product of n weights (row_bytes(wtype, n) bytes of wtype blocks, any alignment) with n
// activations quantized by quantize_row_q8_1 (n / 32 blocks). n must be a whole number of weight blocks.
// Throws strata::Error for a type without a canonical dot or a bad n.
float canonical_dot(GgmlType wtype, const void* wrow, const block_q8_1* act, int64_t n);

// ---- section 4: float weights against float activations ---------------------------------------------------

// F32, F16 and BF16.
bool is_float_weight(GgmlType wtype);
// Section 4: eight interleaved fma accumulators over n values, summed by the fixed tree. Throws strata::Error
// when wtype is not a float weight type.
float canonical_dot_f(GgmlType wtype, const void* wrow, const float* x, int64_t n);

// ---- section 3: an expert ---------------------------------------------------------------------------------

// One expert's matrices as stored in a GGUF (rows of n_embd for gate and up, rows of n_ff for down). Each may be
// any type with a canonical dot (quantized) or a float type; rows are whole blocks.
struct ExpertMatrices {
  GgmlType gate_type, up_type, down_type;
  const void* gate;  // n_ff rows of n_embd
  const void* up;    // n_ff rows of n_embd
  const void* down;  // n_embd rows of n_ff
  int64_t n_embd, n_ff;
  // gpt-oss (strata_expert_form): this expert's biases (NULL: none), the activation, and its constants.
  const float* gate_bias = nullptr;  // [n_ff]
  const float* up_bias = nullptr;    // [n_ff]
  const float* down_bias = nullptr;  // [n_embd]
  uint32_t activation = 0;           // strata_expert_activation: 0 SwiGLU, 1 SwiGLU-OAI
  float alpha = 0.0f, limit = 0.0f;
};

// Section 3: out[0..n_embd) = weight * down(swiglu(gate x, up x)) for one token row x[0..n_embd), the weighted
// row of this (token, expert) pair; with biases, weight * (down(act(gate x + bg, up x + bu)) + bd) (each bias added
// to its dot product in float);
// row of this (token, expert) pair (never summed with other experts here). A quantized matrix reads Q8_1(x)
// (resp. Q8_1(h)); a float matrix reads x (resp. h) as floats. Throws strata::Error for bad types or sizes.
void canonical_expert_row(const ExpertMatrices& expert, const float* x, float weight, float* out);

}  // namespace strata::format
