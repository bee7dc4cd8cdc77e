// The ggml tensor types: ids as GGUF stores them, block sizes, names.
// Facts from ggml's type table (ggml.h / ggml-common.h); the layouts themselves are in blocks.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::format {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TypeTraits {
  GgmlType type;
  std::string_view name;    // as ggml prints it: "q4_K", "iq2_xs", "f32"
  uint32_t block_elems;     // values per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
  bool quantized;           // a block format (not a plain number type)
  bool weight;              // may appear as a weight tensor in a GGUF (Q8_K is activation-only)
};

// Traits of a known type id, or nullopt for an id GGUF files must not carry (removed or unknown ids).
std::optional<TypeTraits> type_traits(uint32_t id);
// Traits of a type that exists (the enum only names existing types).
const TypeTraits& traits(GgmlType t);
// Case-insensitive lookup by ggml's name ("Q4_K", "q4_k", "iq2_xs").
std::optional<GgmlType> type_from_name(std::string_view name);

// Bytes of a row of n values; n must be a multiple of the block size (row_bytes_checked says whether it is).
inline uint64_t row_bytes(GgmlType t, uint64_t n) {
  const TypeTraits& tr = traits(t);
  return n / tr.block_elems * tr.block_bytes;
}

}  // namespace strata::format
