#include "strata/format/dot.hpp"

#include <string>

#include "dot_kernels.hpp"
#include "strata/error.hpp"

namespace strata::format {
namespace {

using DotKernel = float (*)(const unsigned char* w, const unsigned char* a, int64_t nb);

struct DotEntry {
  GgmlType weight;
  GgmlType activation;
  DotKernel kernel;
};

// ggml's vec_dot_type per weight type (type_traits_cpu), with the matching reference kernel.
constexpr DotEntry kDots[] = {
    {GgmlType::Q4_0, GgmlType::Q8_0, detail::dot_q4_0_q8_0},
    {GgmlType::Q4_1, GgmlType::Q8_1, detail::dot_q4_1_q8_1},
    {GgmlType::Q5_0, GgmlType::Q8_0, detail::dot_q5_0_q8_0},
    {GgmlType::Q5_1, GgmlType::Q8_1, detail::dot_q5_1_q8_1},
    {GgmlType::Q8_0, GgmlType::Q8_0, detail::dot_q8_0_q8_0},
    {GgmlType::Q2_K, GgmlType::Q8_K, detail::dot_q2_k_q8_k},
    {GgmlType::Q3_K, GgmlType::Q8_K, detail::dot_q3_k_q8_k},
    {GgmlType::Q4_K, GgmlType::Q8_K, detail::dot_q4_k_q8_k},
    {GgmlType::Q5_K, GgmlType::Q8_K, detail::dot_q5_k_q8_k},
    {GgmlType::Q6_K, GgmlType::Q8_K, detail::dot_q6_k_q8_k},
    {GgmlType::IQ2_XXS, GgmlType::Q8_K, detail::dot_iq2_xxs_q8_k},
    {GgmlType::IQ2_XS, GgmlType::Q8_K, detail::dot_iq2_xs_q8_k},
    {GgmlType::IQ2_S, GgmlType::Q8_K, detail::dot_iq2_s_q8_k},
    {GgmlType::IQ3_XXS, GgmlType::Q8_K, detail::dot_iq3_xxs_q8_k},
    {GgmlType::IQ3_S, GgmlType::Q8_K, detail::dot_iq3_s_q8_k},
    {GgmlType::IQ1_S, GgmlType::Q8_K, detail::dot_iq1_s_q8_k},
    {GgmlType::IQ1_M, GgmlType::Q8_K, detail::dot_iq1_m_q8_k},
    {GgmlType::IQ4_NL, GgmlType::Q8_0, detail::dot_iq4_nl_q8_0},
    {GgmlType::IQ4_XS, GgmlType::Q8_K, detail::dot_iq4_xs_q8_k},
    {GgmlType::TQ1_0, GgmlType::Q8_K, detail::dot_tq1_0_q8_k},
    {GgmlType::TQ2_0, GgmlType::Q8_K, detail::dot_tq2_0_q8_k},
    {GgmlType::MXFP4, GgmlType::Q8_0, detail::dot_mxfp4_q8_0},
};

const DotEntry* find_dot(GgmlType wtype) {
  for (const DotEntry& e : kDots) {
    if (e.weight == wtype) return &e;
  }
  return nullptr;
}

const DotEntry& require_dot(GgmlType wtype, const char* caller) {
  const DotEntry* e = find_dot(wtype);
  if (e == nullptr) {
    throw Error(std::string(caller) + ": no reference dot product for weight type " +
                std::string(traits(wtype).name) + " (only quantized block types that ggml multiplies directly)");
  }
  return *e;
}

}  // namespace

bool has_vec_dot(GgmlType wtype) { return find_dot(wtype) != nullptr; }

GgmlType vec_dot_type(GgmlType wtype) { return require_dot(wtype, "vec_dot_type").activation; }

float vec_dot(GgmlType wtype, const void* w, const void* act, int64_t n) {
  const DotEntry& e = require_dot(wtype, "vec_dot");
  const TypeTraits& wt = traits(wtype);
  const TypeTraits& at = traits(e.activation);
  // The weight block is the larger or equal one, and the activation block divides it.
  if (n < 0 || n % wt.block_elems != 0 || n % at.block_elems != 0) {
    throw Error("vec_dot: " + std::to_string(n) + " values is not a whole number of " + std::string(wt.name) +
                " blocks (" + std::to_string(wt.block_elems) + ") and " + std::string(at.name) + " blocks (" +
                std::to_string(at.block_elems) + ")");
  }
  return e.kernel(static_cast<const unsigned char*>(w), static_cast<const unsigned char*>(act), n / wt.block_elems);
}

}  // namespace strata::format
