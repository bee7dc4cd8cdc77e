// canonical_dot and canonical_dot_f: sections 2 and 4 of docs/CANONICAL_ARITHMETIC.md. The quantized dot is
// written once for all types over their decomposition (canonical_kernels.hpp): exact integer sums per sub-block,
// then the span's float steps, then eight interleaved accumulators and the fixed summation tree.
#include <cmath>
#include <string>

#include "block_io.hpp"
#include "canonical_kernels.hpp"
#include "strata/error.hpp"
#include "strata/format/canonical.hpp"
#include "strata/format/fp16.hpp"

namespace strata::format {
namespace {

using Decompose = void (*)(const void* blocks, int64_t index, CanonicalBlock& out);

struct CanonicalEntry {
  GgmlType type;
  CanonicalLayout layout;
  Decompose decompose;
};

// Sub-block sizes are the type's scale granularity (the table of section 2).
constexpr CanonicalEntry kEntries[] = {
    {GgmlType::Q4_0, {32, 32, false}, kernels::decompose_q4_0},
    {GgmlType::Q4_1, {32, 32, true}, kernels::decompose_q4_1},
    {GgmlType::Q5_0, {32, 32, false}, kernels::decompose_q5_0},
    {GgmlType::Q5_1, {32, 32, true}, kernels::decompose_q5_1},
    {GgmlType::Q8_0, {32, 32, false}, kernels::decompose_q8_0},
    {GgmlType::Q2_K, {256, 16, true}, kernels::decompose_q2_K},
    {GgmlType::Q3_K, {256, 16, false}, kernels::decompose_q3_K},
    {GgmlType::Q4_K, {256, 32, true}, kernels::decompose_q4_K},
    {GgmlType::Q5_K, {256, 32, true}, kernels::decompose_q5_K},
    {GgmlType::Q6_K, {256, 16, false}, kernels::decompose_q6_K},
    {GgmlType::IQ2_XXS, {256, 32, false}, kernels::decompose_iq2_xxs},
    {GgmlType::IQ2_XS, {256, 16, false}, kernels::decompose_iq2_xs},
    {GgmlType::IQ2_S, {256, 16, false}, kernels::decompose_iq2_s},
    {GgmlType::IQ3_XXS, {256, 32, false}, kernels::decompose_iq3_xxs},
    {GgmlType::IQ3_S, {256, 32, false}, kernels::decompose_iq3_s},
    {GgmlType::IQ1_S, {256, 32, false}, kernels::decompose_iq1_s},
    {GgmlType::IQ1_M, {256, 16, false}, kernels::decompose_iq1_m},
    {GgmlType::IQ4_NL, {32, 32, false}, kernels::decompose_iq4_nl},
    {GgmlType::IQ4_XS, {256, 32, false}, kernels::decompose_iq4_xs},
    {GgmlType::MXFP4, {32, 32, false}, kernels::decompose_mxfp4},
    {GgmlType::TQ1_0, {256, 32, false}, kernels::decompose_tq1_0},
    {GgmlType::TQ2_0, {256, 32, false}, kernels::decompose_tq2_0},
};

const CanonicalEntry* find_entry(GgmlType wtype) {
  for (const CanonicalEntry& e : kEntries) {
    if (e.type == wtype) return &e;
  }
  return nullptr;
}

const CanonicalEntry& require_entry(GgmlType wtype, const char* caller) {
  const CanonicalEntry* e = find_entry(wtype);
  if (e == nullptr) {
    throw Error(std::string(caller) + ": weight type " + std::string(traits(wtype).name) +
                " has no canonical quantized dot product (F32, F16 and BF16 weights use canonical_dot_f)");
  }
  return *e;
}

void check_row_length(const char* caller, GgmlType wtype, int64_t n, int64_t block) {
  if (n < 0 || n % block != 0) {
    throw Error(std::string(caller) + ": a row of " + std::to_string(n) + " values is not a whole number of " +
                std::string(traits(wtype).name) + " blocks (" + std::to_string(block) + " values each)");
  }
}

// The fixed tree over the eight accumulators.
float sum_tree(const float (&acc)[8]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

bool has_canonical_dot(GgmlType wtype) { return find_entry(wtype) != nullptr; }

CanonicalLayout canonical_layout(GgmlType wtype) { return require_entry(wtype, "canonical_layout").layout; }

void canonical_decompose(GgmlType wtype, const void* blocks, int64_t index, CanonicalBlock& out) {
  require_entry(wtype, "canonical_decompose").decompose(blocks, index, out);
}

float canonical_dot(GgmlType wtype, const void* wrow, const block_q8_1* act, int64_t n) {
  const CanonicalEntry& e = require_entry(wtype, "canonical_dot");
  const CanonicalLayout& lay = e.layout;
  check_row_length("canonical_dot", wtype, n, lay.block_elems);
  const int spans_per_block = lay.block_elems / QK8_1;
  const int subs_per_span = QK8_1 / lay.sub_elems;
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  CanonicalBlock wb;
  int64_t j = 0;  // span index over the whole row
  for (int64_t blk = 0; blk < n / lay.block_elems; ++blk) {
    e.decompose(wrow, blk, wb);
    for (int s = 0; s < spans_per_block; ++s, ++j) {
      const auto a = load_block<block_q8_1>(act, j);
      int32_t sum_gq[2] = {0, 0};  // S_k
      int32_t sum_q[2] = {0, 0};   // Q_k
      for (int i = 0; i < QK8_1; ++i) {
        const int k = i / lay.sub_elems;
        sum_gq[k] += wb.g[QK8_1 * s + i] * a.qs[i];
        sum_q[k] += a.qs[i];
      }
      const int k0 = s * subs_per_span;
      float t = wb.c[k0] * static_cast<float>(sum_gq[0]);
      if (subs_per_span == 2) t = std::fma(wb.c[k0 + 1], static_cast<float>(sum_gq[1]), t);
      if (lay.has_offset) {
        for (int k = 0; k < subs_per_span; ++k) t = std::fma(wb.b[k0 + k], static_cast<float>(sum_q[k]), t);
      }
      const float p = t * fp16_to_fp32(a.d);
      acc[j % 8] = acc[j % 8] + p;
    }
  }
  return sum_tree(acc);
}

bool is_float_weight(GgmlType wtype) {
  return wtype == GgmlType::F32 || wtype == GgmlType::F16 || wtype == GgmlType::BF16;
}

float canonical_dot_f(GgmlType wtype, const void* wrow, const float* x, int64_t n) {
  if (!is_float_weight(wtype)) {
    throw Error("canonical_dot_f: weight type " + std::string(traits(wtype).name) +
                " is not a float type (F32, F16 or BF16); quantized weights use canonical_dot");
  }
  check_row_length("canonical_dot_f", wtype, n, 1);
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n; ++i) {
    float w;
    if (wtype == GgmlType::F32) {
      w = load_block<float>(wrow, i);
    } else if (wtype == GgmlType::F16) {
      w = fp16_to_fp32(load_block<half_bits>(wrow, i));
    } else {
      w = bf16_to_fp32(load_block<bf16_bits>(wrow, i));
    }
    acc[i % 8] = std::fma(w, x[i], acc[i % 8]);
  }
  return sum_tree(acc);
}

}  // namespace strata::format
