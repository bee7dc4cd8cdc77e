#include "strata/format/types.hpp"

#include <array>
#include <cctype>

namespace strata::format {
namespace {

// Block sizes and bytes are those of ggml's block structs (ggml-common.h); shared/data/quant/README.md lists them.
constexpr std::array<TypeTraits, 32> kTraits = {{
    {GgmlType::F32, "f32", 1, 4, false, true},
    {GgmlType::F16, "f16", 1, 2, false, true},
    {GgmlType::Q4_0, "q4_0", 32, 18, true, true},
    {GgmlType::Q4_1, "q4_1", 32, 20, true, true},
    {GgmlType::Q5_0, "q5_0", 32, 22, true, true},
    {GgmlType::Q5_1, "q5_1", 32, 24, true, true},
    {GgmlType::Q8_0, "q8_0", 32, 34, true, true},
    {GgmlType::Q8_1, "q8_1", 32, 36, true, true},
    {GgmlType::Q2_K, "q2_K", 256, 84, true, true},
    {GgmlType::Q3_K, "q3_K", 256, 110, true, true},
    {GgmlType::Q4_K, "q4_K", 256, 144, true, true},
    {GgmlType::Q5_K, "q5_K", 256, 176, true, true},
    {GgmlType::Q6_K, "q6_K", 256, 210, true, true},
    {GgmlType::Q8_K, "q8_K", 256, 292, true, false},
    {GgmlType::IQ2_XXS, "iq2_xxs", 256, 66, true, true},
    {GgmlType::IQ2_XS, "iq2_xs", 256, 74, true, true},
    {GgmlType::IQ3_XXS, "iq3_xxs", 256, 98, true, true},
    {GgmlType::IQ1_S, "iq1_s", 256, 50, true, true},
    {GgmlType::IQ4_NL, "iq4_nl", 32, 18, true, true},
    {GgmlType::IQ3_S, "iq3_s", 256, 110, true, true},
    {GgmlType::IQ2_S, "iq2_s", 256, 82, true, true},
    {GgmlType::IQ4_XS, "iq4_xs", 256, 136, true, true},
    {GgmlType::I8, "i8", 1, 1, false, true},
    {GgmlType::I16, "i16", 1, 2, false, true},
    {GgmlType::I32, "i32", 1, 4, false, true},
    {GgmlType::I64, "i64", 1, 8, false, true},
    {GgmlType::F64, "f64", 1, 8, false, true},
    {GgmlType::IQ1_M, "iq1_m", 256, 56, true, true},
    {GgmlType::BF16, "bf16", 1, 2, false, true},
    {GgmlType::TQ1_0, "tq1_0", 256, 54, true, true},
    {GgmlType::TQ2_0, "tq2_0", 256, 66, true, true},
    {GgmlType::MXFP4, "mxfp4", 32, 17, true, true},
}};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t id) {
  for (const TypeTraits& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

const TypeTraits& traits(GgmlType type) {
  for (const TypeTraits& t : kTraits) {
    if (t.type == type) return t;
  }
  return kTraits[0];  // unreachable: the enum names only types in the table
}

std::optional<GgmlType> type_from_name(std::string_view name) {
  for (const TypeTraits& t : kTraits) {
    if (iequal(t.name, name)) return t.type;
  }
  return std::nullopt;
}

}  // namespace strata::format
