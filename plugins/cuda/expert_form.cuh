// strata_expert_form (backend 1.6, gpt-oss) as the expert kernels take it. The form is host memory read when an op
// is enqueued: its activation and its bias pointers (device memory, rows by expert id) are copied into the kernels'
// arguments. The steps are the reference's (core/format/canonical_expert.cpp): g = gate . x (+ bg), u = up . x
// (+ bu), h = act(g, u), y = down . h (+ bd), row = weight * y, each bias added to its dot in one float addition.
#pragma once

#include <cstdint>

#include "canonical_math.cuh"
#include "strata/plugin_api.h"

namespace strata::gpu {

// Section 3 step 3: swiglu_c, or gpt-oss's clamped swiglu_oai_c with its constants.
struct ExpertAct {
  int oai;  // 0: SwiGLU; 1: SwiGLU-OAI
  float alpha, limit;
};

// The form's biases (nullptr: none): gate and up rows of n_ff floats, down rows of n_embd, expert e's at row e.
struct ExpertBiases {
  const float* gate;
  const float* up;
  const float* down;
};

struct ExpertForm {
  ExpertAct act;
  ExpertBiases bias;
};

// The kernels' copy of a form (nullptr: plain SwiGLU without biases). Host code; the form was checked
// (format::check_expert_form) by the op's check.
inline ExpertForm expert_form_of(const strata_expert_form* f) {
  if (f == nullptr) return ExpertForm{{0, 0.0f, 0.0f}, {nullptr, nullptr, nullptr}};
  return ExpertForm{{f->activation == STRATA_EXPERT_SWIGLU_OAI ? 1 : 0, f->alpha, f->limit},
                    {f->gate_bias, f->up_bias, f->down_bias}};
}

__host__ __device__ __forceinline__ float expert_act(const ExpertAct& a, float g, float u) {
  return a.oai != 0 ? swiglu_oai_c(g, u, a.alpha, a.limit) : swiglu_c(g, u);
}

// dot + bias row `row` of expert `expert` (rows of n floats), or dot alone without a bias.
__host__ __device__ __forceinline__ float add_bias(float dot, const float* bias, int64_t expert, int64_t n,
                                                   int64_t row) {
  return bias != nullptr ? add_x86(dot, bias[expert * n + row]) : dot;
}

}  // namespace strata::gpu
