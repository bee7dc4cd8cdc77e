#include "strata/format/dequantize.hpp"

#include <stdexcept>
#include <string>

#include "dequantize_kernels.hpp"

namespace strata::format {
namespace {

using Decoder = void (*)(const void*, float*, int64_t);

Decoder decoder_for(GgmlType type) {
  using namespace kernels;
  switch (type) {
    case GgmlType::F32: return dequantize_f32;
    case GgmlType::F16: return dequantize_f16;
    case GgmlType::BF16: return dequantize_bf16;
    case GgmlType::Q4_0: return dequantize_q4_0;
    case GgmlType::Q4_1: return dequantize_q4_1;
    case GgmlType::Q5_0: return dequantize_q5_0;
    case GgmlType::Q5_1: return dequantize_q5_1;
    case GgmlType::Q8_0: return dequantize_q8_0;
    case GgmlType::Q2_K: return dequantize_q2_K;
    case GgmlType::Q3_K: return dequantize_q3_K;
    case GgmlType::Q4_K: return dequantize_q4_K;
    case GgmlType::Q5_K: return dequantize_q5_K;
    case GgmlType::Q6_K: return dequantize_q6_K;
    case GgmlType::Q8_K: return dequantize_q8_K;
    case GgmlType::IQ2_XXS: return dequantize_iq2_xxs;
    case GgmlType::IQ2_XS: return dequantize_iq2_xs;
    case GgmlType::IQ2_S: return dequantize_iq2_s;
    case GgmlType::IQ3_XXS: return dequantize_iq3_xxs;
    case GgmlType::IQ3_S: return dequantize_iq3_s;
    case GgmlType::IQ1_S: return dequantize_iq1_s;
    case GgmlType::IQ1_M: return dequantize_iq1_m;
    case GgmlType::IQ4_NL: return dequantize_iq4_nl;
    case GgmlType::IQ4_XS: return dequantize_iq4_xs;
    case GgmlType::MXFP4: return dequantize_mxfp4;
    case GgmlType::TQ1_0: return dequantize_tq1_0;
    case GgmlType::TQ2_0: return dequantize_tq2_0;
    // ggml has no to_float for these: Q8_1 is an activation-only format; the rest are not float data.
    case GgmlType::Q8_1:
    case GgmlType::I8:
    case GgmlType::I16:
    case GgmlType::I32:
    case GgmlType::I64:
    case GgmlType::F64:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

bool has_dequantize(GgmlType type) { return decoder_for(type) != nullptr; }

void dequantize_row(GgmlType type, const void* blocks, float* out, int64_t n) {
  const Decoder decode = decoder_for(type);
  const TypeTraits& tr = traits(type);
  if (decode == nullptr) {
    throw std::invalid_argument("dequantize_row: type " + std::string(tr.name) +
                                " has no decoder (ggml defines no to_float for it)");
  }
  if (n < 0 || n % tr.block_elems != 0) {
    throw std::invalid_argument("dequantize_row: " + std::to_string(n) + " values of type " + std::string(tr.name) +
                                " is not a whole number of blocks; n must be a non-negative multiple of " +
                                std::to_string(tr.block_elems));
  }
  decode(blocks, out, n / tr.block_elems);
}

}  // namespace strata::format
