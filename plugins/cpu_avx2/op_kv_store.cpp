// KV_STORE: writes src0's columns (f32 [kv_dim, n_tok]) into the cache (f16 or q8_0 [kv_dim, n_ctx]) at the
// positions src1 holds: f16 rounded to nearest even, q8_0 with the format library's quantizer.
#include "ops.hpp"
#include "row_math.hpp"
#include "strata/format/blocks.hpp"
#include "strata/format/quantize_activation.hpp"
#include "tensor_view.hpp"

namespace strata::cpu {

Check check_kv_store(const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &cache = op.dst;
  if (auto e = check_matrix(x, "src0", format::GgmlType::F32)) return e;
  if (auto e = check_rows(pos, "src1 (positions)", format::GgmlType::I32)) return e;
  if (!is_type(cache, format::GgmlType::F16) && !is_type(cache, format::GgmlType::Q8_0)) {
    return "cache type " + type_name(cache.type) + " (known: f16, q8_0)";
  }
  if (auto e = check_matrix(cache, "dst (cache)")) return e;
  if (cache.ne[0] != x.ne[0]) return std::string("cache columns and src0 columns differ in length");
  if (row_count(pos) != 1 || pos.ne[0] != x.ne[1]) return std::string("src1 must hold one position per column");
  return std::nullopt;
}

void run_kv_store(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &pos = op.src[1], &cache = op.dst;
  const auto* p = static_cast<const int32_t*>(pos.data);
  const int64_t n = x.ne[0];
  for (int64_t t = 0; t < x.ne[1]; ++t) {
    if (p[t] < 0 || p[t] >= cache.ne[1]) {
      throw OpFailure(STRATA_ERR_INVALID_ARGUMENT, "KV_STORE: position " + std::to_string(p[t]) + " of column " +
                                                      std::to_string(t) + " is outside the cache's " +
                                                      std::to_string(cache.ne[1]) + " columns");
    }
  }
  const bool f16 = is_type(cache, format::GgmlType::F16);
  for_items(ctx, x.ne[1], n, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const float* in = row_ptr<const float>(x, t);
      if (f16) {
        f32_to_f16_row(in, row_ptr<uint16_t>(cache, p[t]), n);
      } else {
        format::quantize_row_q8_0(in, row_ptr<format::block_q8_0>(cache, p[t]), n);
      }
    }
  });
}

}  // namespace strata::cpu
