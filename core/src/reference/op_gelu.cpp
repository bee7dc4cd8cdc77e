// GELU (backend 1.7): dst f32 = gelu(src0 f32), elementwise, in the tanh form
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2)))     (double, rounded to float once)
// i[0] = 1: as ggml's CPU table gives it (llama.cpp's projector on the CPU): f16(gelu(f16(x))) for -10 < x < 10,
// 0 at or below -10 and x at or above 10, f16 rounding to nearest even, gelu in float as ggml builds its table
// (format::gelu_f16_table, which every backend reads).
#include <cmath>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/gelu_table.hpp"

namespace strata::reference {
namespace {

double gelu_d(double x) {
  const double sqrt_2_over_pi = 0.79788456080286535587989211986876;
  return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * x * (1.0 + 0.044715 * x * x)));
}

}  // namespace

void gelu(const strata_op& op) {
  const char* name = "GELU";
  const strata_tensor& x = op.src[0];
  require_rowwise_f32(name, x, op.dst);
  require(op.i[0] == 0 || op.i[0] == 1, name, "src0", x, "i[0] 0 (exact) or 1 (ggml's f16 table)");
  const bool table = op.i[0] == 1;
  map_rows(x, op.dst, [&](std::vector<float>& row) {
    for (float& v : row) {
      if (!table) {
        v = static_cast<float>(gelu_d(static_cast<double>(v)));
      } else if (v <= -10.0f) {
        v = 0.0f;
      } else if (v < 10.0f) {
        v = format::gelu_f16_table()[format::fp32_to_fp16(v)];
      }
    }
  });
}

}  // namespace strata::reference
