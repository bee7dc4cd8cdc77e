#include "strata/format/gelu_table.hpp"

#include <cmath>
#include <vector>

#include "strata/format/fp16.hpp"

namespace strata::format {

const float* gelu_f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(h));
      // Float throughout (-ffp-contract=off on this library: no fused multiply-adds), as ggml's table is built.
      const float g = 0.5f * x * (1.0f + std::tanh(0.79788456080286535587989211986876f * x * (1.0f + 0.044715f * x * x)));
      t[h] = fp16_to_fp32(fp32_to_fp16(g));
    }
    return t;
  }();
  return table.data();
}

}  // namespace strata::format
