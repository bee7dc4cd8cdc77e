#include "strata/format/quantize_weights.hpp"

#include <cstring>
#include <string>

#include "quantize_kernels.hpp"
#include "strata/error.hpp"
#include "strata/format/quantize_activation.hpp"

namespace strata::format {
namespace {

// Quantizes block by block into a local struct and copies it out: `blocks` may sit at any byte offset.
template <typename Block, int kElems>
void quantize_blocks(void (*quantize_block)(const float*, Block&), const float* x, void* blocks, int64_t n) {
  auto* out = static_cast<unsigned char*>(blocks);
  for (int64_t i = 0; i < n / kElems; ++i) {
    Block block{};
    quantize_block(x + i * kElems, block);
    std::memcpy(out + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

}  // namespace

bool has_quantize(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

void quantize_row(GgmlType type, const float* x, void* blocks, int64_t n) {
  const TypeTraits& tr = traits(type);
  if (!has_quantize(type)) {
    throw Error("quantize_row: no reference quantizer for type " + std::string(tr.name) +
                " (supported: q4_0, q4_1, q5_0, q5_1, q8_0, q2_K .. q6_K)");
  }
  if (n < 0 || n % tr.block_elems != 0) {
    throw Error("quantize_row: " + std::to_string(n) + " values is not a whole number of " + std::string(tr.name) +
                " blocks of " + std::to_string(tr.block_elems) + "; pad the row to a multiple of the block size");
  }
  switch (type) {
    case GgmlType::Q4_0: return quantize_blocks<block_q4_0, QK4_0>(detail::quantize_block_q4_0, x, blocks, n);
    case GgmlType::Q4_1: return quantize_blocks<block_q4_1, QK4_1>(detail::quantize_block_q4_1, x, blocks, n);
    case GgmlType::Q5_0: return quantize_blocks<block_q5_0, QK5_0>(detail::quantize_block_q5_0, x, blocks, n);
    case GgmlType::Q5_1: return quantize_blocks<block_q5_1, QK5_1>(detail::quantize_block_q5_1, x, blocks, n);
    // Weights and activations share ggml's one Q8_0 reference quantizer.
    case GgmlType::Q8_0: return quantize_row_q8_0(x, static_cast<block_q8_0*>(blocks), n);
    case GgmlType::Q2_K: return quantize_blocks<block_q2_K, QK_K>(detail::quantize_block_q2_k, x, blocks, n);
    case GgmlType::Q3_K: return quantize_blocks<block_q3_K, QK_K>(detail::quantize_block_q3_k, x, blocks, n);
    case GgmlType::Q4_K: return quantize_blocks<block_q4_K, QK_K>(detail::quantize_block_q4_k, x, blocks, n);
    case GgmlType::Q5_K: return quantize_blocks<block_q5_K, QK_K>(detail::quantize_block_q5_k, x, blocks, n);
    case GgmlType::Q6_K: return quantize_blocks<block_q6_K, QK_K>(detail::quantize_block_q6_k, x, blocks, n);
    default: return;  // has_quantize rejected every other type above
  }
}

}  // namespace strata::format
