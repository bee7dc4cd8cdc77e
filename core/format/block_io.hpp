// Reading blocks out of raw tensor bytes. Tensor data may sit at any offset (a GGUF in memory, a slice of a
// row), so blocks are copied out instead of read through a cast pointer.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace strata::format {

// The block structs mirror ggml's little-endian layout field for field.
static_assert(std::endian::native == std::endian::little, "strata's block decoders assume a little-endian host");

template <class Block>
Block load_block(const void* blocks, int64_t index) {
  Block b;
  std::memcpy(&b, static_cast<const unsigned char*>(blocks) + index * static_cast<int64_t>(sizeof(Block)),
              sizeof(Block));
  return b;
}

template <class Block>
void store_block(void* blocks, int64_t index, const Block& b) {
  std::memcpy(static_cast<unsigned char*>(blocks) + index * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

// Element j (0..7 or 0..3) of a packed grid entry: byte j in little-endian order.
inline uint8_t grid_byte(uint64_t entry, int j) { return static_cast<uint8_t>(entry >> (8 * j)); }

}  // namespace strata::format
