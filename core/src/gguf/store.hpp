// What a parsed GGUF file holds: its bytes (mapped, owned or borrowed) and the views the parser built over them.
// Private to core/src/gguf.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mapping.hpp"
#include "strata/gguf.hpp"

namespace strata::gguf::detail {

static_assert(std::endian::native == std::endian::little, "GGUF is little-endian; this reader loads it as is");

// Loads a little-endian T from unaligned bytes.
template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Store {
  std::string name;
  Mapping mapping;             // when opened from a path
  std::vector<uint8_t> owned;  // when given bytes to own
  const uint8_t* base = nullptr;
  uint64_t size = 0;

  uint32_t version = 0;
  uint32_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;

  std::vector<KeyValue> kvs;
  std::unordered_map<std::string_view, uint32_t> kv_index;
  std::vector<std::string_view> string_pool;  // elements of string arrays, in file order
  std::vector<Value> array_pool;              // elements of arrays of arrays
  std::vector<TensorView> tensors;
  std::unordered_map<std::string_view, uint32_t> tensor_index;
  Metadata metadata;  // here rather than in File, so references to it survive moving the File

  // Fills everything above from [base, base + size); throws FormatError.
  void parse();
};

}  // namespace strata::gguf::detail
