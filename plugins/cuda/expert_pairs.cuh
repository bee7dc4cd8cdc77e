// The expert pipeline shared by MOE (pairs planned on the host) and MOE_ROUTED (pairs grouped on the device):
// docs/CANONICAL_ARITHMETIC.md section 3 for every (token, expert) pair, then each token's weighted rows summed
// in ascending expert id. Pairs of one expert are grouped into items of up to kItemPairs pairs, so a warp decodes
// an expert's weight row once for all the pairs of its item; the integer and float steps per (row, pair) are those
// of MUL_MAT, so a pair's bits do not depend on its grouping.
#pragma once

#include <cstdint>

#include "context.hpp"
#include "expert_form.cuh"

namespace strata::gpu {

constexpr int kItemPairs = 8;

// Up to kItemPairs pairs routed to one expert, with that expert's matrices (gate, up, down).
struct PairItem {
  const uint8_t* mat[3];
  uint32_t n;
  uint32_t expert;             // its id: the row of the form's biases
  uint32_t token[kItemPairs];  // the pair's row of x
  uint32_t pair[kItemPairs];   // the pair's index: its rows of the hidden and output buffers
};

// Where a pipeline's plan lives (device memory) and what it computes.
struct ExpertPlan {
  uint32_t gate_type, up_type, down_type;
  int64_t n_embd, n_ff;
  int64_t n_tok, n_pairs;
  int pairs_per_item;             // NT of the pair kernels: every item holds at most this many pairs
  const PairItem* items;          // [max_items]
  const uint32_t* n_items;        // how many of them are in use
  unsigned max_items;
  const float* pair_weight;       // [n_pairs] the router weight of each pair
  const uint32_t* tok_begin;      // [n_tok] token t's pairs are tok_pairs[tok_begin[t] ..+ tok_count[t]],
  const uint32_t* tok_count;      //   in ascending expert id; an entry with kPairElsewhere (pair_rows.cuh) is
  const uint32_t* tok_pairs;      //   a pair no item computes, its row read from `pre`
  const float* x;                 // [n_embd] rows, x_stride floats apart
  int64_t x_stride;
  float* rows;                    // [n_embd, n_pairs] out: the weighted row of each pair the items hold,
  int64_t rows_stride;            //   rows_stride floats apart (n_embd, or dst's stride with MOE_ROUTED's rows out)
  const float* pre;               // MOE_ROUTED's src3 (columns pre_stride floats apart), or NULL
  int64_t pre_stride;
  float* dst;                     // [n_embd] rows, dst_stride floats apart: per-token sums; NULL: rows only
  int64_t dst_stride;
  ExpertForm form;                // biases (by PairItem::expert) and activation (backend 1.6)
};

// Enqueues the whole pipeline: Q8_1 of x (through the context's quantized-activation cache), gate and up rows
// (+ their biases), the activation (and its Q8_1), down rows (+ bias) weighted by the router weights into
// plan.rows, per-token sums into plan.dst (unless it is NULL).
void run_expert_plan(Context& ctx, const ExpertPlan& plan);

// Whether a weight type has an expert kernel, and the row alignment it needs (0: none).
int expert_weight_alignment(uint32_t type);

}  // namespace strata::gpu
