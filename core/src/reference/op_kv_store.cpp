// KV_STORE: dst a cache [kv_dim, n_ctx] of F16 or Q8_0 (or F32: the reference's exact mode, for comparisons with
// llama.cpp's F32 cache); src0 f32 [kv_dim, n_tok]; src1 i32 [n_tok] positions in [0, n_ctx). Cache column src1[t]
// becomes column t of src0, converted: F16 rounded to nearest even (fp32_to_fp16), Q8_0 quantized by
// quantize_row_q8_0 (kv_dim a multiple of 32), F32 copied. Other columns are left as they are.
#include <cstring>
#include <string>
#include <vector>

#include "ops.hpp"
#include "rows.hpp"
#include "strata/error.hpp"
#include "strata/format/fp16.hpp"
#include "strata/format/quantize_activation.hpp"
#include "strata/op_tensor.hpp"

namespace strata::reference {

void kv_store(const strata_op& op) {
  const char* name = "KV_STORE";
  const strata_tensor& cache = op.dst;
  const strata_tensor& x = op.src[0];
  const strata_tensor& pos = op.src[1];
  const GgmlType ctype = tensor_type(cache);
  require(ctype == GgmlType::F16 || ctype == GgmlType::Q8_0 || ctype == GgmlType::F32, name, "dst (cache)", cache,
          "f16, q8_0 or f32");
  require_data(name, "dst (cache)", cache);
  require_contiguous_rows(name, "dst (cache)", cache);
  require_type(name, "src0", x, GgmlType::F32);
  require(x.ne[0] == cache.ne[0], name, "src0", x, "[" + std::to_string(cache.ne[0]) + ", n_tok]");
  require_type(name, "src1 (positions)", pos, GgmlType::I32);
  require(pos.ne[0] == x.ne[1], name, "src1 (positions)", pos, "one position per column of src0");
  const int64_t n = x.ne[0];
  for (int64_t t = 0; t < x.ne[1]; ++t) {
    const int32_t p = read_i32(pos, t);
    if (p < 0 || p >= cache.ne[1]) {
      throw Error("KV_STORE: position " + std::to_string(p) + " is outside the cache's " +
                  std::to_string(cache.ne[1]) + " columns");
    }
    const std::vector<float> col = read_row(x, t);
    unsigned char* out = tensor_row(cache, p);
    if (ctype == GgmlType::F32) {
      std::memcpy(out, col.data(), sizeof(float) * static_cast<size_t>(n));
    } else if (ctype == GgmlType::F16) {
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = format::fp32_to_fp16(col[static_cast<size_t>(i)]);
        std::memcpy(out + 2 * i, &h, 2);
      }
    } else {
      std::vector<format::block_q8_0> q(static_cast<size_t>(n / format::QK8_0));
      format::quantize_row_q8_0(col.data(), q.data(), n);
      std::memcpy(out, q.data(), q.size() * sizeof(format::block_q8_0));
    }
  }
}

}  // namespace strata::reference
