// A tensor's values dequantized to f32: the first few for display, or all of them streamed to a file.
#include <algorithm>
#include <bit>
#include <cstring>
#include <ostream>

#include "strata/error.hpp"
#include "strata/format/dequantize.hpp"
#include "strata/inspect.hpp"
#include "text_format.hpp"

namespace strata::inspect {
namespace {

// Values decoded per chunk when streaming: a multiple of every block size (1, 32, 256).
constexpr uint64_t kChunkValues = 1u << 16;

void require_decoder(const gguf::TensorView& t) {
  if (!format::has_dequantize(t.type)) {
    throw Error("tensor " + detail::display_name(t.name) + " has type " + std::string(format::traits(t.type).name) +
                ", which strata cannot convert to f32 values (it decodes float and quantized weight types)");
  }
}

// Decodes `count` values starting at value `first`; both are multiples of the type's block size.
void decode(const gguf::TensorView& t, uint64_t first, uint64_t count, float* out) {
  const auto& tr = format::traits(t.type);
  const uint8_t* src = t.data + first / tr.block_elems * tr.block_bytes;
  format::dequantize_row(t.type, src, out, static_cast<int64_t>(count));
}

}  // namespace

std::vector<float> tensor_values(const gguf::TensorView& tensor, uint64_t n) {
  require_decoder(tensor);
  const uint64_t block = format::traits(tensor.type).block_elems;
  const uint64_t wanted = std::min(n, tensor.n_elements);
  // Whole blocks covering the wanted values; the reader checked that n_elements is a multiple of the block.
  std::vector<float> out((wanted + block - 1) / block * block);
  if (!out.empty()) decode(tensor, 0, out.size(), out.data());
  out.resize(wanted);
  return out;
}

void write_tensor_f32(const gguf::TensorView& tensor, std::ostream& out) {
  require_decoder(tensor);
  std::vector<float> values(static_cast<size_t>(std::min<uint64_t>(kChunkValues, tensor.n_elements)));
  std::vector<char> bytes(values.size() * 4);
  for (uint64_t first = 0; first < tensor.n_elements; first += values.size()) {
    const uint64_t count = std::min<uint64_t>(values.size(), tensor.n_elements - first);
    decode(tensor, first, count, values.data());
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t u;
      std::memcpy(&u, &values[i], 4);
      if constexpr (std::endian::native == std::endian::big) u = __builtin_bswap32(u);
      std::memcpy(&bytes[i * 4], &u, 4);
    }
    out.write(bytes.data(), static_cast<std::streamsize>(count * 4));
    if (!out) throw Error("writing the values of tensor '" + std::string(tensor.name) + "' failed");
  }
}

}  // namespace strata::inspect
