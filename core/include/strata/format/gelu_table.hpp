// GELU's f16 table (backend 1.7's GELU with i[0] = 1): the value for each of the 65536 halves, computed once on the
// host in float as ggml's CPU table is (0.5 x (1 + tanhf(sqrt(2/pi) x (1 + 0.044715 x^2))), then rounded to f16),
// so that every backend reads the same table: the reference and cpu_avx2 directly, a GPU from a copy it uploads.
#pragma once

#include <cstdint>

namespace strata::format {

// The 65536 entries, index = the f16 bits of the (already f16-rounded) input; entry = f16(gelu(x)) as a float.
// Entries for |x| >= 10 and NaN are those of the formula; the op itself maps x <= -10 to 0 and x >= 10 to x.
const float* gelu_f16_table();

}  // namespace strata::format
